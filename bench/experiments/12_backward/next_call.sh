#!/usr/bin/env bash
# Prepared for the next device call of step 12, NOT YET RUN (the session that wrote it had spent
# its GPU time). One GPU, about 330 s. Build first, on the build machine:
#   mkdir -p build/var_edv && cp build/steps/00_materialized.so build/var_edv/ &&
#   python3 bench/experiments/12_backward/variants/make_edv.py /tmp/edv.cu &&
#   nvcc $(make -s step-flags STEP=12 | tail -1) -o build/var_edv/12_backward_wgmma.so /tmp/edv.cu
# Then, on the GPU:
#   bars.csv        the step, edv (dV issued before the wait for dP^T, D = 128), the step again, at
#                   the bar shapes; peers_bars.csv  SDPA's cuDNN and flash right after
#   ncu.txt         Nsight Compute of the step's bwd_main<128> and of cuDNN's backward kernel at
#                   (4, 8, 4096, 4096, 128), not causal: the shape where step 12 is 0.996x cuDNN.
#                   Tensor pipe, shared pipe, L2, stall reasons per issued instruction
#   sanitize.txt    racecheck and synccheck of edv on four D = 128 shapes
#   gpu_tests.txt   the GPU tests (step12_causal_sections_of_heads has not run yet)
# Usage (repo root): bench/experiments/12_backward/next_call.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
dir() { case $1 in step*) echo build/steps;; *) echo build/var_$1;; esac; }
for v in step edv step2; do
  ATTN_SWEEPS_FILE=$d/bars.txt ATTN_STEPS_DIR=$(dir $v) build/attn bench --sweep bwdbars --steps 12 --out $w/$v.csv >> $log 2>&1; say $v
done
{ head -1 $w/step.csv; for v in step edv step2; do sed 1d $w/$v.csv | sed "s/12_backward_wgmma/12_$v/"; done; } > $o/bars.csv
ATTN_SWEEPS_FILE=$d/bars.txt env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
M="sm__cycles_active.avg,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
M="$M,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed"
M="$M,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
NCU="ncu --clock-control none --section SpeedOfLight --metrics $M"
{ echo "commit $sha"
  echo "=== step 12: bwd_main<128> 4,8,4096,4096,128 non-causal"
  timeout 150 $NCU -k regex:bwd_main -c 1 build/attn run --step 12 --backward --shape 4,8,4096,4096,128 --reps 1 2>&1 | grep -vE "^==PROF|^(step|problem|gpu|check|time|rate|workspace|timed) "
  echo "=== sdpa_cudnn backward 4,8,4096,4096,128 non-causal"
  timeout 150 env -u LD_LIBRARY_PATH $NCU -k regex:bprop --launch-skip 1 -c 1 python3 $d/cudnn_bwd_once.py 128 2>&1 | grep -v "^==PROF"
} > $o/ncu.txt 2>&1; say ncu
{ echo "commit $sha"; timeout 300 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
mkdir -p $o/s; n=0
for tool in racecheck synccheck; do
  for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,1,129,128"; do
    n=$((n+1))
    ( out=$(ATTN_STEPS_DIR=build/var_edv timeout 250 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
      echo "edv $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt ) &
  done
done
wait
{ echo "commit $sha + variants/make_edv.py"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s $w
say done
