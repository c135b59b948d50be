#!/usr/bin/env bash
# Run once (not kept: README). Step 12's K/V ring counted in unsigned (uns.patch): i % STAGES and i / STAGES of a signed count
# cost the signed-division fix-ups (ULEA.HI, a mask, a subtract) at each of the loop's ring waits;
# ../12_d64_profile puts step 12's integer and uniform bookkeeping at about 0.008 warp samples a
# key tile more than FlashAttention-4's (of 0.096). Prediction: 0.5-2 % less time at D = 64,
# less at D = 128 (longer trips). Builds, here (make first; ../tools/candidates.sh's NV):
#   git apply bench/experiments/12_ring_unsigned/uns.patch
#   $NV steps/12_three_warpgroups/attention.cu -o build/var12u/uns.so
#   git checkout steps/12_three_warpgroups/attention.cu
#   cp build/steps/12_three_warpgroups.so build/var12u/base.so
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~1 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var12u
d=$(steps_with 12_three_warpgroups=$v/uns.so)
quick_runs "$d" 12 "" "1,2,1000,777,64 --causal" "2,3,4000,4001,64" "1,2,777,1000,128 --causal" \
    "1,4,16384,4097,64" >"$o/checks.txt" 2>&1
timeout -k 5 120 build/v15/ab --rounds 3 --reps 6 --shape 4,8,4096,4096,64 --shape 4,8,16384,16384,64 \
    --shape 4,8,16384,16384,64,c --shape 4,8,16384,16384,128 --shape 4,8,4096,4096,128,c \
    $v/base.so $v/uns.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the CPU, $(grep -c 'vs step 00' "$o/checks.txt") against step 00, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
