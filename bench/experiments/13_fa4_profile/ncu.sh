#!/usr/bin/env bash
# Nsight Compute (clocks not locked) on step 13's backward and FlashAttention-4's at the bar shape
# where step 13 is furthest behind (4,8,4096,4096,64, not causal: 0.80-0.86x FA4) and at D = 128:
# each kernel's duration and clock, the tensor pipe's share (sm__pipe_shared_cycles_active, the
# pipe that issues wgmma: gmma's own counter reads n/a under this driver), issue activity, and the
# warp-state breakdown (WarpStateStats), SpeedOfLight and LaunchStats.
# usage (on the H200, from the repository root, FlashAttention-4 installed, build/v15/ab built):
#   bash bench/experiments/13_fa4_profile/ncu.sh OUT
set -u
o=${1:?usage: ncu.sh OUT}; mkdir -p "$o"
M=sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,sm__warps_active.avg.pct_of_peak_sustained_active
N="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --metrics $M"
for sh in 4,8,4096,4096,64 4,8,4096,4096,128; do
    echo "=== step 13 backward $sh"
    timeout 120 $N -k regex:bwd_main --launch-skip 1 --launch-count 1 \
        build/v15/ab --backward --rounds 1 --reps 1 --shape $sh build/steps/13_backward_wgmma.so 2>&1 | grep -v "==PROF=="
    echo "=== fa4 backward $sh"
    timeout 150 $N --profile-from-start off \
        python3 bench/experiments/tools/ncu_peer.py fa4 bwd $sh 2>&1 | grep -v "==PROF=="
done
