#!/usr/bin/env bash
# Run 2026-12-02 and landed (README.md); the patches apply to c7799f2, not to the steps since.
# The backward's mask after dS^T (MASK_LATE, stepNN.patch): in the kernels with a mask
# (causal, or Nk not a multiple of 128), the branch that skips the mask on tiles with nothing to
# mask held all 32 exponentials before it, back to back (22-41 MUFU in a row in the SASS);
# after dS^T, ptxas spreads them among dS^T's FADDs and FMULs past the wait for dP^T (at most 3
# in a row), FlashAttention-4's schedule. The kernels without a mask are the same SASS. Step 13's
# loop at D = 128 causal drew 0.021 warp samples a trip at its exponentials, FlashAttention-4's
# 0.006, of 0.176 against 0.164 in all (../13_bwd_fa4_lines). Prediction: 1-4 % less time at the
# causal bar shapes, both head dims; none not causal (N a multiple of 128). A padded key's
# P = 2^(0 - lse2) overflows to inf on a row far below zero: the mask, a select, now zeroes that
# P and the dS^T made from it, so the far-input checks on ragged Nk are the ones that matter.
# Builds, here (make first; ../tools/candidates.sh's NV; build/var13 is git-ignored):
#   cp build/steps/13_backward_wgmma.so build/var13/base.so
#   cp build/steps/14_gqa.so build/var13/base14.so
#   git apply bench/experiments/13_mask_late/step13.patch bench/experiments/13_mask_late/step14.patch
#   $NV steps/13_backward_wgmma/attention.cu -o build/var13/ml13.so
#   $NV steps/14_gqa/attention.cu -o build/var13/ml14.so
#   git checkout steps/
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~6 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var13
d=$(steps_with 13_backward_wgmma=$v/ml13.so 14_gqa=$v/ml14.so)
{
    quick_runs "$d" 13 "--backward --inputs far" 4,8,1000,1000,128 "1,4,1000,777,128 --causal" \
        "2,8,4096,4096,128 --causal" 1,4,1000,777,64 "1,4,777,1000,64 --causal" \
        "2,8,2048,2048,64 --causal"
    quick_runs "$d" 13 "--backward" "1,2,129,127,128 --causal" "1,3,300,700,64 --causal" \
        "2,8,4096,4096,64 --causal"
    quick_runs "$d" 13 "--backward --deterministic" "2,8,4096,4096,128 --causal" \
        "2,8,2048,2048,64 --causal" 1,4,1000,777,128
    quick_runs "$d" 14 "--backward --inputs far" "2,8,1000,1000,128,2 --causal" 2,8,777,1500,64,4
} >"$o/checks.txt" 2>&1
# shellcheck disable=SC2086
timeout -k 5 150 build/v15/ab --backward --rounds 3 --reps 6 $BAR_SHAPES \
    --shape 4,8,8192,8192,128,c --shape 4,8,4000,4000,128 \
    $v/base.so $v/ml13.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
cp $v/base14.so $v/base.so
timeout -k 5 60 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,32,4096,4096,128,8,c \
    --shape 4,32,4096,4096,64,8,c $v/base.so $v/ml14.so >"$o/ab14.csv" 2>"$o/ab14.log"
ab_ratios "$o/ab14.csv" | tee "$o/ab14_ratios.txt"
g=$(mktemp -d)   # the grids on step 00 (their reference) and the two patched steps alone
ln -s "$PWD/build/steps/00_materialized.so" "$g/"
for s in 13_backward_wgmma 14_gqa; do ln -s "$d/$s.so" "$g/"; done
{ ATTN_STEPS_DIR=$g timeout -k 5 230 build/tests/gpu --verbose --filter 'gpu/grid_*'
  echo "[exit status $?]"; } >"$o/grids.txt" 2>&1 &
{ ATTN_STEPS_DIR=$d TOOLS="memcheck racecheck" timeout -k 5 230 bench/sanitize.sh 13
  echo "[exit status $?]"; } >"$o/sanitize.txt" 2>&1 &
wait
grep -hE "Synthesis|exit status" "$o/grids.txt" | head -4
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
echo "sanitize: $(grep -c 'rc 0;' "$o/sanitize.txt") clean of $(grep -c '^step ' "$o/sanitize.txt") runs"
