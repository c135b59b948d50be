#!/usr/bin/env bash
# 13_dkv_tma's pending change (README): fresh13.patch and fresh14.patch, the epilogue's addresses
# read afresh, so that step 14's masked loops compile to their instructions before TMA_DKV.
# Launch by launch against the steps as committed, then checks against the CPU on ragged, causal,
# grouped and deterministic shapes and memcheck, with the builds in the steps' place.
# Builds, here (make first; ../tools/pack.sh builds them): build/var13k/fresh13.so, fresh14.so.
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~2 min): fresh.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: fresh.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
d=build/var13k
for st in 13 14; do
    mkdir -p /tmp/f$st && cp build/steps/${st}_*.so /tmp/f$st/base.so && cp $d/fresh$st.so /tmp/f$st/fresh.so
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
