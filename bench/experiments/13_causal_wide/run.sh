#!/usr/bin/env bash
# Not yet run. Step 13's causal backward at D = 128 takes 64-row query tiles, its not-causal one
# 80 (BwdTiles<128, true>, dQ computed transposed), which took 7.2-7.8 % off the time at
# N = 16384 and 2.9 % at 4096 (../13_br80). Causal kept 64 because its walk "starts key tile kt at
# query tile kt Bc / Br, so Bc must be a multiple of Br" (note 13). That holds only for the
# deterministic kernel's turns (det2_turn counted the last key tile that sees query tile qt as
# qt Br / Bc); the walk itself starts at floor(k0 / Br) and the mask is a per-element compare
# in every tile with q0 < kw0 + 63, so a first tile that starts before k0 only drops its early
# rows. wide.patch (CAUSAL_WIDE): bwd_wide() takes causal D = 128 too, and det2_turn counts
# (qt Br + Br - 1) / Bc (the same number wherever Bc % Br == 0). The causal 80-row kernels are
# the masked ones already compiled for ragged Nk (no spills, the same SASS); only the launch and
# the deterministic kernels' turn arithmetic change (CAUSAL_WIDE=0: the step's SASS).
# Prediction: at N = 16384 causal most of the not-causal gain, less the rows a first tile wastes
# before its key tile (at most 79 of ~8,000 a key tile sees on average): 5-7 % less time, 0.937x
# FlashAttention-4 to about 1.0; at N = 4096, 1-2 % (the waste is 4x the share); at 2048 maybe
# nothing. Deterministic causal: about the same gain, if the turns still flow.
# Builds, here (make first; ../tools/candidates.sh's NV; build/var13w is git-ignored):
#   git apply bench/experiments/13_causal_wide/wide.patch
#   $NV -DCAUSAL_WIDE=1 steps/13_backward_wgmma/attention.cu -o build/var13w/wide.so
#   git checkout steps/13_backward_wgmma/attention.cu
#   cp build/steps/13_backward_wgmma.so build/var13w/base.so
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~6 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var13w
d=$(steps_with 13_backward_wgmma=$v/wide.so)
{
    quick_runs "$d" 13 "--backward --inputs far" "1,4,1000,777,128 --causal" "2,8,4096,4096,128 --causal" \
        "1,4,777,1000,128 --causal" "1,2,4000,4000,128 --causal"
    quick_runs "$d" 13 "--backward" "1,2,129,127,128 --causal" "1,3,300,700,128 --causal" \
        "1,2,81,81,128 --causal" "1,2,160,200,128 --causal" "2,8,4096,4096,128 --causal"
    quick_runs "$d" 13 "--backward --deterministic" "2,8,4096,4096,128 --causal" "1,4,1000,777,128 --causal" \
        "1,2,4000,4000,128 --causal"
} >"$o/checks.txt" 2>&1
# the deterministic backward bitwise repeatable, two streams; the causal sections of heads
for t in deterministic_backward_is_repeatable step13_causal_sections_of_heads top_step_two_problems_on_two_streams; do
    ATTN_STEPS_DIR=$d timeout -k 5 100 build/tests/gpu --verbose --filter "gpu/$t"
    echo "[exit status $?]"
done >"$o/gpu_tests.txt" 2>&1 &
{ ATTN_STEPS_DIR=$d TOOLS="memcheck racecheck" timeout -k 5 150 bench/sanitize.sh 13; echo "[exit status $?]"; } \
    >"$o/sanitize.txt" 2>&1 &
wait
timeout -k 5 200 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,2048,2048,128,c \
    --shape 4,8,4096,4096,128,c --shape 4,8,8192,8192,128,c --shape 4,8,16384,16384,128,c \
    $v/base.so $v/wide.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the CPU, $(grep -c 'vs step 00' "$o/checks.txt") against step 00, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
grep -E 'Synthesis|exit status' "$o/gpu_tests.txt"
echo "sanitize: $(grep -c 'rc 0;' "$o/sanitize.txt") clean of $(grep -c '^step ' "$o/sanitize.txt") runs"
