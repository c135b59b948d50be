#!/usr/bin/env bash
# Run once (README: not kept). Step 13's backward at D = 128 on 64-row query tiles (causal, and the masked kernels)
# spends 0.026 warp samples a trip at the FFMAs of P against FlashAttention-4's 0.007, one of them
# waiting for a pair of lse2 read from shared memory after the wait for S^T
# (../13_bwd_fa4_lines); reading all eight pairs before the wait costs 16 registers and spills
# (../13_lse2_early). shfl.patch (LSE2_SHFL): each lane reads 2 of the tile's 64 lse2 values
# before the wait (2 registers, where LSE2_EARLY held 4), and a thread takes its pair j from lane
# 4 j + t by two shuffles after it. In the SASS: no spills, 17 instructions more a trip (346 ->
# 363 not masked), no shared-memory load between the wait and the first exponent; the D = 64 and
# 80-row kernels unchanged. Prediction: if the wait is the load's latency, 1-3 % less time causal
# at D = 128; if the shuffles' latency is the same, a loss of the 17 instructions (~1 %).
# Builds, here (make first; ../tools/candidates.sh's NV; build/var13s is git-ignored):
#   git apply bench/experiments/13_lse2_shfl/shfl.patch
#   $NV -DLSE2_SHFL=1 steps/13_backward_wgmma/attention.cu -o build/var13s/shfl.so
#   git checkout steps/13_backward_wgmma/attention.cu
#   cp build/steps/13_backward_wgmma.so build/var13s/base.so
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~3 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var13s
d=$(steps_with 13_backward_wgmma=$v/shfl.so)
{
    quick_runs "$d" 13 "--backward --inputs far" "1,4,1000,777,128 --causal" "2,8,4096,4096,128 --causal" \
        "1,4,777,1000,128 --causal"
    quick_runs "$d" 13 "--backward" "1,2,129,127,128 --causal" "1,3,300,700,128" "2,8,4096,4096,128 --causal"
    quick_runs "$d" 13 "--backward --deterministic" "2,8,4096,4096,128 --causal" 1,4,1000,777,128
} >"$o/checks.txt" 2>&1
timeout -k 5 200 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,4096,4096,128,c \
    --shape 4,8,8192,8192,128,c --shape 4,8,16384,16384,128,c --shape 4,8,2048,2048,128,c \
    $v/base.so $v/shfl.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the CPU, $(grep -c 'vs step 00' "$o/checks.txt") against step 00, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
