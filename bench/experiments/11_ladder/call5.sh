#!/usr/bin/env bash
# Fifth device call of the ladder's split (a later session): what the first four left open.
#  1. Nsight Compute on step 11 itself beside SDPA's cuDNN kernel at the shape where step 11 is
#     just short of cuDNN (B=4 H=8 N=4096 D=128 non-causal), and on steps 10 and 11 at D=64
#     causal, where step 11 is 3-4 % behind step 10: ncu11.txt.
#  2. make bench QUICK=1's measurement part, timed alone (bench/run.sh --quick DIR): quick/.
#  3. The complete attn check of every step, one process per group of steps in parallel (each
#     group computes its own fp64 reference): check_<group>.txt/.csv; with it the sanitizers of the
#     top step on all its shapes (bench/sanitize.sh 11). Before it, the training demo and the CLI
#     record (train_demo.txt, cli.txt), which time things and so run alone.
# Usage (repo root): bench/experiments/11_ladder/call5.sh OUT   (no LD_LIBRARY_PATH: no tests run)
set -u
o=$1; d=bench/experiments/11_ladder; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
say start
NCU="ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
{
  echo "commit $sha"
  echo "=== step 11 4,8,4096,4096,128 non-causal"
  timeout 80 $NCU -k regex:attention_fwd -c 1 build/attn run --step 11 --shape 4,8,4096,4096,128 --reps 1
  echo "=== sdpa_cudnn 4,8,4096,4096,128 non-causal"
  timeout 80 $NCU -k regex:cudnn --launch-skip 2 -c 1 python3 $d/cudnn_once.py 128
  for s in 10 11; do
    echo "=== step $s 4,8,4096,4096,64 causal"
    timeout 60 $NCU -k regex:attention_fwd -c 1 build/attn run --step $s --shape 4,8,4096,4096,64 --causal --reps 1
  done
} > $o/ncu11.txt 2>&1
say ncu
TIMEFORMAT="make bench QUICK=1, its measurement part: %R s wall"
{ time timeout 200 bash bench/run.sh --quick $o/quick; } > $o/quick.log 2>&1
say quick bench rc $?
{ echo "commit $sha"; timeout 200 python3 python/train_demo.py; echo "[exit status $?]"; } > $o/train_demo.txt 2>&1
say train demo
{ echo "commit $sha"; timeout 100 bash bench/cli_examples.sh; } > $o/cli.txt 2>&1
say cli
groups="00 01,02 03,04 05 06 07,08 09,10 11"
for g in $groups; do
  ( { echo "commit $sha"; timeout 280 build/attn check --steps $g --csv $o/check_$g.csv; echo "[exit status $?]"; } > $o/check_$g.txt 2>&1 ) &
done
( { echo "commit $sha"; timeout 280 bench/sanitize.sh 11; } > $o/sanitize11.txt 2>&1 ) &
wait
say check, sanitize
cd $o && tar czf checks.tgz check_* sanitize11.txt && rm -f check_* sanitize11.txt && tar czf quick.tgz quick && rm -rf quick
