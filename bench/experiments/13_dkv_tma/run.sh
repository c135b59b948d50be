#!/usr/bin/env bash
# 13_dkv_tma: the backward's dK and dV through shared memory and TMA stores at D = 128 (dkv.patch
# on step 13, dkv14.patch on step 14; README). First, alone on the GPU, launch by launch: step 13
# against its build at the eight bar shapes (and dkv64: at D = 64 too, timed only), step 14 at
# four (two grouped). Then, with the builds in the steps' place: attn check of steps 13 and 14
# (the grid, backward and forward, cut at 160 s), four GPU tests that reach the backward, memcheck
# and racecheck on ragged, causal, deterministic and grouped shapes.
# Builds, here (make first): build/var13k/dkv13.so, dkv14.so, dkv13_64.so, the patches applied to
# the steps at f5ae55d (landed since; ../tools/pack.sh at f5ae55d built them).
# With `fresh`, the pending change instead (fresh13.patch, fresh14.patch: the epilogue's addresses
# read afresh, so that step 14's masked loops compile to their instructions before TMA_DKV):
# launch by launch against the steps as committed, then checks against the CPU on ragged, causal,
# grouped and deterministic shapes and memcheck, with the builds in the steps' place (~2 min;
# builds build/var13k/fresh13.so, fresh14.so, from ../tools/pack.sh at 510b085; not kept).
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; at most ~3.5 min): run.sh OUT [fresh]
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [fresh]}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
d=build/var13k
if [ "${2:-}" = fresh ]; then
    for st in 13 14; do
        mkdir -p /tmp/f$st && cp build/steps/${st}_*.so /tmp/f$st/base.so &&
            cp $d/fresh$st.so /tmp/f$st/fresh.so
    done
    timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 --shape 4,8,4096,4096,128,c \
        --shape 4,32,4096,4096,128,8,c --shape 4,8,8192,8192,128,c --shape 4,8,16384,16384,128,c \
        --shape 4,8,4096,4096,128 /tmp/f14/base.so /tmp/f14/fresh.so >"$o/ab_fresh14.csv" 2>>"$o/ab.log"
    timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 --shape 4,8,4096,4096,128,c \
        --shape 4,8,16384,16384,128,c --shape 4,8,4096,4096,128 /tmp/f13/base.so /tmp/f13/fresh.so \
        >"$o/ab_fresh13.csv" 2>>"$o/ab.log"
    { echo "step 14, fresh over the step"; ab_ratios "$o/ab_fresh14.csv"
      echo "step 13, fresh over the step"; ab_ratios "$o/ab_fresh13.csv"; } | tee "$o/ab_ratios.txt"
    sd=$(steps_with 13_backward_wgmma=$d/fresh13.so 14_gqa=$d/fresh14.so)
    {
        for st in 13 14; do
            quick_runs "$sd" $st "--backward" "1,2,1000,1000,128 --causal" "1,2,8200,8191,128 --causal" \
                "2,3,777,129,128" "1,2,65,1,128"
            quick_runs "$sd" $st "--backward --inputs far" "1,2,1000,777,128 --causal"
            quick_runs "$sd" $st "--backward --deterministic" "1,2,1000,1000,128 --causal"
        done
        quick_runs "$sd" 14 "--backward" "1,8,1000,777,128,2 --causal" "2,8,4096,4096,128,4"
    } >"$o/checks.txt" 2>&1
    for st in 13 14; do
        ATTN_STEPS_DIR=$sd timeout -k 5 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
            build/attn run --step $st --backward --shape 1,2,1000,777,128 --causal --reps 1 2>&1 |
            grep -E "ERROR SUMMARY|^check|FAIL|rror"
        echo "step $st memcheck rc ${PIPESTATUS[0]}"
    done >"$o/memcheck.txt" 2>&1
    echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the CPU, $(grep -c 'vs step 00' "$o/checks.txt") against step 00, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
    cat "$o/memcheck.txt"
    exit 0
fi
for st in 13 14; do
    mkdir -p /tmp/k$st && cp build/steps/${st}_*.so /tmp/k$st/base.so && cp $d/dkv$st.so /tmp/k$st/dkv.so
done
cp $d/dkv13_64.so /tmp/k13/dkv64.so
# shellcheck disable=SC2086
timeout -k 5 150 build/v15/ab --backward --rounds 3 --reps 6 $BAR_SHAPES /tmp/k13/base.so \
    /tmp/k13/dkv.so /tmp/k13/dkv64.so >"$o/ab_13.csv" 2>>"$o/ab.log"
timeout -k 5 100 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,4096,4096,128 \
    --shape 4,8,16384,16384,128,c --shape 4,32,4096,4096,128,8 --shape 4,32,4096,4096,128,8,c \
    /tmp/k14/base.so /tmp/k14/dkv.so >"$o/ab_14.csv" 2>>"$o/ab.log"
{ echo "step 13, dkv over the step"; ab_ratios "$o/ab_13.csv"
  echo "step 14, dkv over the step"; ab_ratios "$o/ab_14.csv"; } | tee "$o/ab_ratios.txt"
sd=$(steps_with 13_backward_wgmma=$d/dkv13.so 14_gqa=$d/dkv14.so)
{ echo "commit $(cat .git-sha) with dkv.patch, dkv14.patch"
  ATTN_STEPS_DIR=$sd timeout -k 5 160 build/attn check --steps 13,14 --csv "$o/check.csv"
  echo "[exit status $?]"; } >"$o/check.txt" 2>&1 &
for t in deterministic_backward_is_repeatable every_step_refuses_a_misaligned_pointer \
    top_step_two_problems_on_two_streams step14_grouped_causal_sections_of_heads; do
    ATTN_STEPS_DIR=$sd timeout -k 5 80 build/tests/gpu --verbose --filter "gpu/$t"
    echo "[exit status $?]"
done >"$o/gpu_tests.txt" 2>&1 &
{
    for a in "memcheck 13 1,2,1000,1000,128" "memcheck 13 1,2,8200,8191,128 --causal" \
        "memcheck 14 1,8,1000,777,128,2 --causal" "racecheck 13 1,2,777,300,128 --deterministic"; do
        set -- $a
        # shellcheck disable=SC2086
        ATTN_STEPS_DIR=$sd timeout -k 5 80 compute-sanitizer --tool "$1" --error-exitcode 9 \
            build/attn run --step "$2" --backward --shape "$3" ${4:-} --reps 1 2>&1 |
            grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^check|FAIL|rror"
        echo "step $2 $3 ${4:-} $1 rc ${PIPESTATUS[0]}"
    done
} >"$o/sanitize.txt" 2>&1 &
wait
tail -n 4 "$o/check.txt"
grep -E 'Synthesis|exit status|^\[FAIL' "$o/gpu_tests.txt"
grep ' rc ' "$o/sanitize.txt"
