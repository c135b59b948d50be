#!/usr/bin/env bash
# 13_mask_bias: the backward's mask as S^T's starting value, before the product, instead of a
# select after dS^T behind a branch (README). Builds (build/var13b, made by ../tools/pack.sh):
# b13 (bias13.patch), fm (the step with its masked kernel forced where nothing is masked: what
# the mask costs there today), fmb (b13 forced the same way: what the bias leaves of it), b14
# (bias14.patch: the same in step 14).
# First the A/B, launch by launch, then checks: attn run against the CPU on causal and ragged
# shapes, far inputs and the deterministic backward included, with b13 and b14 in their steps'
# places, check lines against the step's digit for digit (0 + x is x: the same bits are
# expected), memcheck on two shapes.
# Builds, here (after make): run.sh build. The patches apply to c67a873, the steps before the
# change landed (git checkout c67a873 first); it ran there: run_h100/ (the A/B and checks), verify_h100/.
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs): run.sh OUT (~3 min)
# run.sh OUT verify: with b13 and b14 in their steps' places, the whole GPU suite, bench/sanitize.sh
# 12 13 14 (two copies) and the Python door side by side, then memcheck at causal Nq = 8200 (~8 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
d=build/var13b E=bench/experiments/13_mask_bias f=steps/13_backward_wgmma/attention.cu
if [ "${1:-}" = build ]; then
    mkdir -p $d
    force() { sed -i 's/    const bool unmasked = !p->causal/    const bool unmasked = false \&\& !p->causal/' $f; }
    for v in b13:bias13 fm: fmb:bias13; do
        [ -n "${v#*:}" ] && { git apply $E/${v#*:}.patch || exit 1; }
        case $v in fm*) force; grep -q 'unmasked = false' $f || { git checkout $f; exit 1; } ;; esac
        # shellcheck disable=SC2086
        $NV $f -o $d/${v%%:*}.so || { git checkout $f; exit 1; }
        git checkout $f
    done
    git apply $E/bias14.patch || exit 1
    $NV steps/14_gqa/attention.cu -o $d/b14.so || { git checkout steps/14_gqa; exit 1; }
    git checkout steps/14_gqa
    exit 0
fi
o=${1:?usage: run.sh OUT [verify] | run.sh build}; mkdir -p "$o" && o=$(cd "$o" && pwd)
if [ "${2:-}" = verify ]; then   # the whole GPU suite, the sanitizers and the Python door, b13 and b14 in place
    sd=$(steps_with 13_backward_wgmma=$d/b13.so 14_gqa=$d/b14.so)
    echo "commit $(cat .git-sha), bias13.patch and bias14.patch as steps 13 and 14" | tee "$o/gpu_tests.txt" \
        >"$o/python.txt"
    { ATTN_STEPS_DIR=$sd timeout -k 5 450 build/tests/gpu --verbose; echo "[exit status $?]"; } >>"$o/gpu_tests.txt" 2>&1 &
    for t in "memcheck synccheck" racecheck; do
        { ATTN_STEPS_DIR=$sd TOOLS="$t" timeout -k 5 450 bench/sanitize.sh 12 13 14; echo "[exit status $?]"; } \
            >"$o/sanitize_${t%% *}.txt" 2>&1 &
    done
    { ATTN_STEPS_DIR=$sd python_door /tmp/door.txt; cat /tmp/door.txt >>"$o/python.txt"; } &
    wait
    for st in 13 14; do
        ATTN_STEPS_DIR=$sd timeout -k 5 60 compute-sanitizer --tool memcheck --error-exitcode 9 build/attn run \
            --step $st --backward --shape 1,2,8200,8192,128 --causal --reps 1 2>&1 | grep -E "ERROR SUMMARY|^check|FAIL|rror"
        echo "step $st memcheck rc ${PIPESTATUS[0]}"
    done >"$o/memcheck.txt" 2>&1
    grep -E 'Synthesis|exit status|^\[FAIL' "$o/gpu_tests.txt"; tail -12 "$o/python.txt"; cat "$o/memcheck.txt"
    for f in "$o"/sanitize_*.txt; do echo "$f: $(grep -c 'rc 0;' "$f") clean of $(grep -c '^step ' "$f"); $(tail -1 "$f")"; done
    exit 0
fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .git-sha; } >"$o/gpu.txt"
mkdir -p /tmp/mb && cp build/steps/13_backward_wgmma.so /tmp/mb/base.so && cp $d/*.so /tmp/mb/
timeout -k 5 200 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64,c --shape 4,8,8192,8192,128,c \
    --shape 4,8,4096,4096,128,c --shape 4,8,4096,4096,64,c --shape 4,8,4000,4000,128 \
    --shape 4,8,4000,4000,64 \
    /tmp/mb/base.so /tmp/mb/b13.so >"$o/ab_bias.csv" 2>>"$o/ab.log"
echo "bias rc $?" >>"$o/ab.log"
timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,8,16384,16384,128 --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64 \
    /tmp/mb/base.so /tmp/mb/fm.so /tmp/mb/fmb.so >"$o/ab_forced.csv" 2>>"$o/ab.log"
echo "forced rc $?" >>"$o/ab.log"
mkdir -p /tmp/mb14 && cp build/steps/14_gqa.so /tmp/mb14/base.so && cp $d/b14.so /tmp/mb14/
timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64,c --shape 4,32,4096,4096,128,8,c \
    /tmp/mb14/base.so /tmp/mb14/b14.so >"$o/ab_14.csv" 2>>"$o/ab.log"
echo "14 rc $?" >>"$o/ab.log"
{ echo "causal and ragged: the bias over the step (time, lowest-highest over rounds)"
  ab_ratios "$o/ab_bias.csv"
  echo "nothing masked: the masked kernel forced (fm), and with the bias (fmb), over the step"
  ab_ratios "$o/ab_forced.csv"
  echo "step 14: the bias over the step"
  ab_ratios "$o/ab_14.csv"; } | tee "$o/ab_ratios.txt"
sd=$(steps_with 13_backward_wgmma=$d/b13.so 14_gqa=$d/b14.so)
{
    quick_runs "$sd" 13 "--backward" "1,2,1000,1000,128 --causal" "1,2,777,1000,64 --causal" \
        "2,3,1000,777,128 --causal" "1,2,333,1000,128" "1,1,4096,4096,64 --causal" \
        "1,1,8200,8192,128 --causal" "1,2,1000,4100,64"
    quick_runs "$sd" 13 "--backward --inputs far" "1,2,1000,1000,128 --causal" "1,2,1000,777,64" \
        "1,2,777,777,64 --causal" "1,1,8200,8100,128 --causal"
    quick_runs "$sd" 13 "--backward --deterministic" "1,2,1000,777,128 --causal" "1,2,8300,8250,128 --causal"
    quick_runs "$sd" 14 "--backward" "1,8,1000,1000,64,2 --causal" "2,8,777,900,128,8 --causal" \
        "1,8,8200,8192,128,4 --causal"
    quick_runs "$sd" 14 "--backward --inputs far" "1,4,1000,777,64,2 --causal" "1,4,777,1000,128,1"
    for sh in "1,2,777,1000,128 --causal" "1,2,1000,777,64 --causal"; do
        # shellcheck disable=SC2086
        ATTN_STEPS_DIR=$sd timeout -k 5 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
            build/attn run --step 13 --backward --shape $sh --reps 1 2>&1 | grep -E "ERROR SUMMARY|^check"
        echo "memcheck $sh rc ${PIPESTATUS[0]}"
    done
} >"$o/checks.txt" 2>&1
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS, $(grep -E 'FAIL|rror' "$o/checks.txt" | grep -vc 'ERROR SUMMARY: 0 errors') FAIL or error"
same_lines "$sd" 13 "--backward" "$o/same_bits.txt" "1,2,1000,1000,128 --causal" "2,3,1000,777,64 --causal" \
    "1,2,8200,8192,128 --causal" "1,2,333,1000,128"
