#!/usr/bin/env bash
# Ninth device call of step 12: is shared memory the limit of bwd_main<128>? Nsight Compute's
# shared-memory bank and pipe utilisation and its warp stall reasons (per issued instruction),
# at B=4 H=8 N=4096 D=128 not causal, for the step, its "nostage" ablation (make_ablate.py: dQ
# neither staged nor added) and cuDNN's backward kernel. ncu_smem.txt.
set -u
o=$1; d=bench/experiments/12_backward; sha=$(cat .git-sha 2>/dev/null || echo unknown)
M="sm__cycles_active.avg,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed"
M="$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed"
M="$M,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
NCU="ncu --clock-control none --metrics $M"
{
  echo "commit $sha"
  for v in steps nostage; do
    dir=build/var_$v; [ $v = steps ] && dir=build/steps
    echo "=== $v: bwd_main<128> 4,8,4096,4096,128 non-causal"
    ATTN_STEPS_DIR=$dir timeout 120 $NCU -k regex:bwd_main -c 1 build/attn run --step 12 --backward --shape 4,8,4096,4096,128 --reps 1 2>&1 | grep -vE "^==PROF|^(step|problem|gpu|check|time|rate|workspace|timed) "
  done
  echo "=== sdpa_cudnn backward 4,8,4096,4096,128 non-causal"
  timeout 120 env -u LD_LIBRARY_PATH $NCU -k regex:bprop --launch-skip 1 -c 1 python3 $d/cudnn_bwd_once.py 128 2>&1 | grep -v "^==PROF"
} > $o/ncu_smem.txt 2>&1
