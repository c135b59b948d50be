#!/usr/bin/env bash
# 13_dkv64_unmasked: dK and dV by TMA at D = 64 in the unmasked kernel only (dkvu13.patch,
# dkvu14.patch; README). First, alone on the GPU, launch by launch: steps 13 and 14 against their
# builds at D = 64, the shapes that run the unmasked kernel (Nk a multiple of 128, not causal) and
# one causal shape as the null test (its kernels compile to the step's SASS). Then checks against
# the CPU and memcheck on shapes that run the changed kernel (checks.txt), and the whole GPU
# suite, the Python door and memcheck (../13_causal_wide/verify.sh) with the builds in the steps'
# place: the suite's four grids are the check grid of every step. ~7 min; with `quick`, the suite
# without its grids (verify.sh quick), ~4 min; with `ab`, the A/B and the checks alone, ~2 min.
# Builds, here: build/var13u/u13.so, u14.so, the steps with dkvu13.patch, dkvu14.patch (landed
# since; ../tools/pack.sh built them at 510b085).
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs): run.sh OUT [quick|ab]
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [quick|ab]}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
d=build/var13u
for st in 13 14; do
    mkdir -p /tmp/u$st && cp build/steps/${st}_*.so /tmp/u$st/base.so && cp $d/u$st.so /tmp/u$st/u.so
done
timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 --shape 4,8,4096,4096,64 \
    --shape 4,8,8192,8192,64 --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64,c \
    /tmp/u13/base.so /tmp/u13/u.so >"$o/ab_13.csv" 2>>"$o/ab.log"
timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 --shape 4,8,4096,4096,64 \
    --shape 4,32,4096,4096,64,8 --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64,c \
    /tmp/u14/base.so /tmp/u14/u.so >"$o/ab_14.csv" 2>>"$o/ab.log"
{ echo "step 13, u over the step"; ab_ratios "$o/ab_13.csv"
  echo "step 14, u over the step"; ab_ratios "$o/ab_14.csv"; } | tee "$o/ab_ratios.txt"
sd=$(steps_with 13_backward_wgmma=$d/u13.so 14_gqa=$d/u14.so)
{   # shapes that run the changed kernel (D = 64, Nk a multiple of 128, not causal), against the CPU
    for st in 13 14; do
        quick_runs "$sd" $st "--backward" "2,3,777,256,64" "1,2,1000,1024,64" "1,2,65,128,64" \
            "1,1,4096,4096,64"
        quick_runs "$sd" $st "--backward --inputs far" "1,2,1000,512,64"
    done
    quick_runs "$sd" 14 "--backward" "1,8,1000,384,64,2" "2,8,777,512,64,8"
    for st in 13 14; do
        ATTN_STEPS_DIR=$sd timeout -k 5 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
            build/attn run --step $st --backward --shape 1,2,777,384,64 --reps 1 2>&1 |
            grep -E "ERROR SUMMARY|^check|FAIL|rror"
        echo "step $st memcheck rc ${PIPESTATUS[0]}"
    done
} >"$o/checks.txt" 2>&1
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the CPU, $(grep -E 'FAIL|rror' "$o/checks.txt" | grep -vc 'ERROR SUMMARY: 0 errors') FAIL or error"
grep "memcheck rc" "$o/checks.txt"
[ "${2:-}" = ab ] && exit 0
ATTN_STEPS_DIR=$sd bash bench/experiments/13_causal_wide/verify.sh "$o" ${2:+"$2"}
