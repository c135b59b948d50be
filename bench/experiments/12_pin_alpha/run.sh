#!/usr/bin/env bash
# Run on an H100 (run_h100/, then `p2` in p2_h100/); landed with the head at 1 group (README.md).
# The builds it names came from tools/pack.sh before the landing (git log).
# Step 12 with alpha (the rescale factors, two exponentials a thread) held before the
# wait for P V beside what pin_softmax holds already (alpha.patch): in the SASS as committed, the
# two MUFU.EX2 of alpha come last, after every other exponential of the tile, so O's 32 (D = 64)
# or 64 (D = 128) FMULs wait for them and run in a block after the last MUFU; held, the FMULs
# interleave with the exponentials after the wait. Instructions after a trip's last MUFU (its
# tail): 41-42 -> 13-15 at D = 64 (three warpgroups), 76 -> 11 at D = 128; the same registers, no
# spill; the arithmetic unchanged (the check lines must agree digit for digit). Prediction: 0-2 %
# less time where a warpgroup's softmax is on its path to its next turn, most at D = 128 not
# causal (the longest tail); the few-tiles kernel (D = 64, 192 keys, N <= 2048) moves most of
# its exponentials after the wait with it, so it is timed too.
# Builds, here (make first; ../tools/candidates.sh's NV), as tools/pack.sh makes them:
#   git apply bench/experiments/12_pin_alpha/alpha.patch
#   $NV steps/12_three_warpgroups/attention.cu -o build/var12a/alpha.so
#   git checkout steps/12_three_warpgroups/attention.cu
#   cp build/steps/12_three_warpgroups.so build/var12a/base.so
# and alpha_p2.so, alpha_p6.so: the same with Tiles<64>::PIN_COLS 2 and 6 (the head of the row
# sum held with alpha: 53 and 36 MUFU after the wait, against 44), since O's FMULs now share the
# time after the wait with the exponentials and the best split of them may move.
# (tools/pack.sh builds these, and alpha13.so, alpha14.so from alpha13.patch, alpha14.patch.)
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, carry .carry with build/var12a
# inside, tar xJf .carry/b.txz first; ~3 min): run.sh OUT
#   run.sh OUT p2: alpha with the head at 0, 1, 2, 3 and 4 (alpha.so) column groups at the D = 64
#   bar shapes, 5 rounds, then the suite below with the head at 2 in steps 12-14 (~7 min)
#   run.sh OUT suite: to land it, the whole GPU suite beside bench/sanitize.sh 12 13 14 with the
#   three builds in the steps' place (candidates.sh's suite; ~6 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [suite]}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var12a
if [ "${2:-}" = p2 ]; then   # after run_h100/: the head's size with alpha at D = 64, then the suite with 2
    # shellcheck disable=SC2086
    timeout -k 5 120 build/v15/ab --rounds 5 --reps 6 --shape 4,8,4096,4096,64 --shape 4,8,16384,16384,64 \
        --shape 4,8,4096,4096,64,c --shape 4,8,16384,16384,64,c --shape 4,8,1024,1024,64 \
        $v/base.so $v/alpha_p0.so $v/alpha_p1.so $v/alpha_p2.so $v/alpha_p3.so $v/alpha.so >"$o/ab_p.csv" 2>"$o/ab_p.log"
    ab_ratios "$o/ab_p.csv" | tee "$o/ab_p_ratios.txt"
    d=$(steps_with 12_three_warpgroups=$v/alpha_p2.so 13_backward_wgmma=$v/alpha13_p2.so 14_gqa=$v/alpha14_p2.so)
    suite "$d" "$o" 12 13 14
    suite_summary "$o"
    exit 0
fi
if [ "${2:-}" = suite ]; then
    d=$(steps_with 12_three_warpgroups=$v/alpha.so 13_backward_wgmma=$v/alpha13.so 14_gqa=$v/alpha14.so)
    suite "$d" "$o" 12 13 14
    suite_summary "$o"
    exit 0
fi
d=$(steps_with 12_three_warpgroups=$v/alpha.so)
quick_runs "$d" 12 "" "1,2,1000,777,64 --causal" "2,3,4000,4001,64" "1,2,777,1000,128 --causal" \
    "1,4,16384,4097,64" "2,4,1000,1000,128" >"$o/checks.txt" 2>&1
same_lines "$d" 12 "" "$o/same_lines.txt" "2,4,1000,1000,128" "1,8,2048,3000,128 --causal" \
    "1,4,1000,777,64" "2,8,4096,4096,64 --causal" "1,4,1024,1024,64"
# shellcheck disable=SC2086
timeout -k 5 200 build/v15/ab --rounds 3 --reps 6 $BAR_SHAPES --shape 4,8,1024,1024,64 \
    $v/base.so $v/alpha.so $v/alpha_p2.so $v/alpha_p6.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the CPU, $(grep -c 'vs step 00' "$o/checks.txt") against step 00, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
