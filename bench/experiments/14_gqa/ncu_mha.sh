#!/usr/bin/env bash
# Why step 14's backward is 5 % slower than step 13's on a problem without groups (note 14):
# Nsight Compute (clocks not locked) on both bwd_main kernels at 4,32,4096,4096,128 (H_kv = H),
# not causal: duration, clock, instructions, the shared pipe, local-memory (spill) traffic,
# warp states and launch statistics.
# usage (on the H200, from the repository root, build/v15/ab built): bash bench/experiments/14_gqa/ncu_mha.sh OUT
set -u
o=${1:?usage: ncu_mha.sh OUT}; mkdir -p "$o"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum
for s in 13_backward_wgmma 14_gqa; do
    echo "=== step $s backward 4,32,4096,4096,128"
    timeout 120 ncu --clock-control none --section WarpStateStats --section LaunchStats --metrics $M \
        -k regex:bwd_main --launch-skip 1 --launch-count 1 \
        build/v15/ab --backward --rounds 1 --reps 1 --shape 4,32,4096,4096,128 build/steps/$s.so 2>&1 |
        grep -vE "==PROF==|==WARNING==|Warning:"
done
