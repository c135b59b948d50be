#!/usr/bin/env bash
# Second device call of step 12: the version with 128-row query tiles at D = 64 and the
# __syncwarp before a stage's release, against the first version (build/var_base), SDPA's cuDNN
# and flash backwards at the bar shapes; Nsight Compute on the backward beside cuDNN's; step 12's
# rows of the standard sweep; then, in parallel, the whole check grid of step 12, the sanitizers
# on every edge shape, and the GPU tests.
#   ab.csv, peers_ab.csv   bars.txt shapes: step 12 now, step 12 first version; cuDNN, flash
#   ncu12.txt              bwd_main at D = 128 and 64, N = 4096, and cuDNN's backward at D = 128
#   standard12.csv         step 12's rows of the standard sweep (forward and backward)
#   check12.txt/.csv, sanitize12.txt, gpu_tests.txt
# Usage (repo root; LD_LIBRARY_PATH set for the tests): bench/experiments/12_backward/call2.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
say start
export ATTN_SWEEPS_FILE=$d/bars.txt
build/attn bench --sweep bwdbars --steps 12 --out $o/t1.csv >> $log 2>&1
ATTN_STEPS_DIR=build/var_base build/attn bench --sweep bwdbars --steps 12 --out $o/t0.csv >> $log 2>&1
env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_ab.csv >> $log 2>&1
{ cat $o/t1.csv; sed 1d $o/t0.csv | sed 's/12_backward_wgmma/12_first_version/'; } > $o/ab.csv; rm -f $o/t0.csv $o/t1.csv
unset ATTN_SWEEPS_FILE
say bars
NCU="ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
{
  echo "commit $sha"
  for sh in 4,8,4096,4096,128 4,8,4096,4096,64; do
    echo "=== step 12 bwd_main $sh non-causal"
    timeout 60 $NCU -k regex:bwd_main -c 1 build/attn run --step 12 --backward --shape $sh --reps 1
  done
  echo "=== sdpa_cudnn backward 4,8,4096,4096,128 non-causal"
  timeout 90 env -u LD_LIBRARY_PATH $NCU -k regex:bprop --launch-skip 1 -c 1 python3 $d/cudnn_bwd_once.py 128
} > $o/ncu12.txt 2>&1
say ncu
build/attn bench --sweep standard --steps 12 --out $o/standard12.csv >> $log 2>&1
say standard
{ echo "commit $sha"; timeout 290 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1 &
{ echo "commit $sha"; timeout 290 bench/sanitize.sh 12; echo "[exit status $?]"; } > $o/sanitize12.txt 2>&1 &
{ echo "commit $sha"; timeout 290 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
wait
say check, sanitize, gpu tests
cd $o && tar czf logs.tgz check12.txt check12.csv sanitize12.txt gpu_tests.txt ncu12.txt
