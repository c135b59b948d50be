#!/usr/bin/env bash
# Nsight Compute (clocks not locked, ncu's cache control off: the L2 flush before each launch is
# the harness's, as when timed) on step 15 and SDPA cuDNN at two bar shapes: the one-query MHA
# shape at D = 128 (step 15 0.996x cuDNN) and the grouped 8,32,1,32768,128,8 (4.2-4.3 TB/s, the
# 4.3 TB/s bar). Per kernel: its duration, DRAM bytes and throughput, and the SMs' active cycles
# (min, mean, max over the 132 SMs: how unevenly the blocks end).
# usage (on the H200, from the repository root, build/v15/ab built by run.sh build, FlashAttention-4
# not needed): bash bench/experiments/15_decode/ncu.sh OUT
set -u
o=${1:?usage: ncu.sh OUT}; mkdir -p "$o"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.avg.per_second,launch__grid_size
N="ncu --clock-control none --cache-control none --metrics $M"
for sh in 8,32,1,32768,128 8,32,1,32768,128,8; do
    echo "=== step 15 $sh"
    timeout 90 $N -k regex:decode --launch-skip 1 --launch-count 2 \
        build/v15/ab --rounds 1 --reps 1 --shape $sh build/steps/15_decode.so 2>&1 | grep -vE "==PROF==|==WARNING==|Warning:"
    echo "=== sdpa_cudnn $sh"
    timeout 90 $N --profile-from-start off \
        python3 bench/experiments/tools/ncu_peer.py cudnn fwd $sh 2>&1 | grep -vE "==PROF==|==WARNING==|Warning:"
done
