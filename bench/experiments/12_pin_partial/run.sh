#!/usr/bin/env bash
# Not yet run. Step 12 at D = 64 pins the row sums before the wait for P V (Tiles<64>::PIN_SUMS),
# so all 64 exponentials of a key tile run before that wait, back to back, and P's 32 F2FPs after
# it, back to back: the loop's largest excess over FlashAttention-4's (note 12, "What is still
# slow"). Pinning the maxima instead (no exponential held) measured 1-2.5 % slower not causal.
# pin.patch dials between the two: PIN_COLS of the 16 column groups sum into chains 0-1 and the
# rest into chains 2-3, and pin_softmax holds chains 0 + 1, so only those exponentials must run
# before the wait. The same instructions a trip (434 on the unmasked path) in every build; in the
# SASS of the D = 64 kernels, MUFU before / after the wait: step 66/0, PIN_COLS 2: 11/55,
# 4: 19/47, 6: 27/39, 8: 58/8 (ptxas keeps more), 12: 66/0 (the chains' control). Prediction:
# somewhere between, the exponentials after the wait fill the F2FPs' gaps while enough before it
# keep the tensor cores fed: 0-3 % less time at D = 64 not causal, where step 12 is 0.94x
# FlashAttention-4 at N = 16384.
# Builds, here (make first; ../tools/candidates.sh's NV; build/var12p is git-ignored):
#   git apply bench/experiments/12_pin_partial/pin.patch
#   for n in 0 2 4 6 8 12; do $NV -DPIN_COLS=$n steps/12_three_warpgroups/attention.cu -o build/var12p/pin$n.so; done
#   git checkout steps/12_three_warpgroups/attention.cu
#   cp build/steps/12_three_warpgroups.so build/var12p/base.so   (pin0.so is the same SASS)
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~3 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var12p
for n in 4 6; do   # the checks: ragged and causal shapes at D = 64 (the other builds differ only in n)
    quick_runs "$(steps_with 12_three_warpgroups=$v/pin$n.so)" 12 "" 1,4,1000,777,64 \
        "1,4,777,1000,64 --causal" 2,8,4096,4096,64 "2,8,4096,4096,64 --causal" "1,8,2000,2000,64 --inputs far"
done >"$o/checks.txt" 2>&1
timeout -k 5 200 build/v15/ab --rounds 3 --reps 20 --shape 4,8,4096,4096,64 --shape 4,8,4096,4096,64,c \
    --shape 4,8,8192,8192,64 --shape 4,8,8192,8192,64,c --shape 4,8,16384,16384,64 \
    --shape 4,8,16384,16384,64,c $v/base.so $v/pin2.so $v/pin4.so $v/pin6.so $v/pin8.so $v/pin12.so \
    >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the CPU, $(grep -c 'vs step 00' "$o/checks.txt") against step 00, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
