#!/usr/bin/env bash
# Why O by TMA store was slower at D = 64, not causal (ab_run: 1.012x the time at N = 4096, 1.022x
# at 16384, where the epilogue held 0.1 % of the warp samples): Nsight Compute on step 12 as it was
# (base.so) and with the TMA store at every head dim (tma12.so), one launch each after a warm-up,
# clocks not locked: duration, cycles, instructions issued, issue slots busy, the tensor pipe.
# Here: run.sh build (at a1138e1's steps). On the H200 (carry build/v12s, build/v15,
# .device-libs; LD_LIBRARY_PATH=$PWD/.device-libs):  ncu_d64.sh OUT  (~2 min)
set -u
cd "$(dirname "$0")/../../.."
o=${1:?usage: ncu_d64.sh OUT}
M=gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_elapsed
M=$M,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
for sh in 4,8,4096,4096,64 4,8,16384,16384,64 4,8,4096,4096,64,c; do
    for b in base tma12; do
        echo "=== $b $sh"
        timeout 120 ncu --clock-control none --metrics "$M" -k regex:attention_fwd --launch-skip 2 \
            --launch-count 1 build/v15/ab --rounds 1 --reps 3 --shape $sh build/v12s/$b.so 2>&1 |
            grep -v "==PROF==" | grep -E "attention_fwd|gpu__|sm__|smsp__"
    done
done >"$o/ncu_d64.txt" 2>&1
cat "$o/ncu_d64.txt"
