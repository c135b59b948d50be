#!/usr/bin/env bash
# Seventeenth device call of step 12 (one GPU), on ee2eca7's step. Timing first, alone on the GPU:
#   bars.csv        the step at the eight bar shapes; then at the four D = 128 ones: edv (dV issued
#                   before the wait for dP^T, variants/make_edv.py), st3 (three stages of the Q, dO
#                   ring at D = 128, variants/make_st3.py), edvst3 (both), the step again
#   peers_bars.csv  SDPA's cuDNN and flash backwards at the bar shapes, right after
# then
#   gpu_tests.txt   the GPU tests (step12_causal_sections_of_heads for the first time)
#   ncu.txt         Nsight Compute at (4, 8, 4096, 4096, 128), not causal, where step 12 measured
#                   0.996x cuDNN: the step's bwd_main<128> and edv's (speed of light, tensor and
#                   shared pipes, stall reasons per issued instruction), cuDNN's backward kernel
#   ncu.tar         the step's full-set report (bwd128.ncu-rep) and its per-line source page
#                   (source_cuda.csv, source_sass.csv): stall samples by source line
# Build first, on the build machine (variants/make_edv.py, make_st3.py; see next_call.sh):
#   build/var_{edv,st3,edvst3}/12_backward_wgmma.so beside a copy of 00_materialized.so
# Usage (repo root): bench/experiments/12_backward/call17.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
grep -E '^#|,128 ' $d/bars.txt > $w/b128.txt
dir() { case $1 in step*) echo build/steps;; *) echo build/var_$1;; esac; }
for v in step edv st3 edvst3 step2; do
  f=$w/b128.txt; [ $v = step ] && f=$d/bars.txt
  ATTN_SWEEPS_FILE=$f ATTN_STEPS_DIR=$(dir $v) build/attn bench --sweep bwdbars --steps 12 --out $w/$v.csv >> $log 2>&1; say $v
done
{ head -1 $w/step.csv; for v in step edv st3 edvst3 step2; do sed 1d $w/$v.csv | sed "s/12_backward_wgmma/12_$v/"; done; } > $o/bars.csv
ATTN_SWEEPS_FILE=$d/bars.txt env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
{ echo "commit $sha"; timeout 280 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1; say gpu tests
M="sm__cycles_active.avg,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
M="$M,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed"
M="$M,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
NCU="ncu --clock-control none --section SpeedOfLight --metrics $M"
R="--step 12 --backward --shape 4,8,4096,4096,128 --reps 1"
{ echo "commit $sha"
  for v in step edv; do
    echo "=== $v: bwd_main<128> 4,8,4096,4096,128 non-causal"
    ATTN_STEPS_DIR=$(dir $v) timeout 100 $NCU -k regex:bwd_main -c 1 build/attn run $R 2>&1 | grep -vE "^==PROF|^(step|problem|gpu|check|time|rate|workspace|timed) "
  done
  echo "=== sdpa_cudnn backward 4,8,4096,4096,128 non-causal"
  timeout 100 env -u LD_LIBRARY_PATH $NCU -k regex:bprop --launch-skip 1 -c 1 python3 $d/cudnn_bwd_once.py 128 2>&1 | grep -v "^==PROF"
} > $o/ncu.txt 2>&1; say ncu
mkdir -p $w/n
timeout 150 ncu --clock-control none --set full --import-source yes -k regex:bwd_main -c 1 -o $w/n/bwd128 build/attn run $R > $w/n/ncu_full.log 2>&1
for p in cuda sass; do timeout 60 ncu -i $w/n/bwd128.ncu-rep --page source --csv --print-source $p > $w/n/source_$p.csv 2>> $w/n/ncu_full.log; done
timeout 60 ncu -i $w/n/bwd128.ncu-rep --page details > $w/n/details.txt 2>> $w/n/ncu_full.log
tar -C $w/n -cf $o/ncu.tar . ; say ncu full
rm -rf $w
