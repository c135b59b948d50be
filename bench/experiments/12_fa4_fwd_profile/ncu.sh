#!/usr/bin/env bash
# Nsight Compute (clocks not locked) on step 12's forward and FlashAttention-4's at the two bar
# shapes where step 12 is furthest behind in bars.csv (4,8,4096,4096,64 causal: 0.92x FA4;
# 4,8,16384,16384,128 not causal: 0.93x): each kernel's duration and clock, the SMs' active
# cycles (min, mean, max: how evenly the work ends), the shared pipe's share (it issues wgmma),
# issue activity, and the warp-state breakdown (WarpStateStats), SpeedOfLight and LaunchStats.
# usage (on the H200, from the repository root, FlashAttention-4 installed, build/v15/ab built):
#   bash bench/experiments/12_fa4_fwd_profile/ncu.sh OUT
set -u
o=${1:?usage: ncu.sh OUT}; mkdir -p "$o"
M=sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed
N="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --metrics $M"
for sc in "4,8,4096,4096,64 causal" "4,8,16384,16384,128 -"; do
    set -- $sc
    sh=$1 c=$2 abs=$1
    [ "$c" = causal ] && abs=$1,c
    echo "=== step 12 forward $sh $c"
    timeout 120 $N -k regex:attention_fwd --launch-skip 1 --launch-count 1 \
        build/v15/ab --rounds 1 --reps 1 --shape $abs build/steps/12_three_warpgroups.so 2>&1 | grep -v "==PROF=="
    echo "=== fa4 forward $sh $c"
    timeout 150 $N --profile-from-start off \
        python3 bench/experiments/tools/ncu_peer.py fa4 fwd $sh $c 2>&1 | grep -v "==PROF=="
done > "$o/ncu_fwd.txt"
