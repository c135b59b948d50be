#!/usr/bin/env bash
# The split of the old step 08 into steps 08-11, first device call: the new steps' check on the
# grid, their sanitizers, the scheduler's paths of step 11 against step 00 / the CPU, and the
# ladder at the eight bar shapes (bars.txt: bf16, B=4, H=8, N 4096 and 16384, D 64 and 128,
# causal and not, forward) beside the old step 08 built from commit ce00115 (build/old08, built
# on the CPU machine from `git archive ce00115`) and SDPA's cuDNN and flash backends, alternating,
# twice (column repeat).
# Usage (repo root, LD_LIBRARY_PATH set): bench/experiments/11_ladder/run.sh OUT
set -u
o=$1; d=bench/experiments/11_ladder; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
say start
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >> $log 2>&1
for st in 08 09 10 11; do
  for shape in "1,133,1,3000,128" "3,47,257,4099,128" "1,2,2000,2000,128" "32,64,128,128,128" "32,64,128,128,64" "2,16,1000,3000,64 --causal" "1,140,130,140,128 --causal"; do
    build/attn run --step $st --shape $shape --dtype bf16 --reps 2 2>&1 | tail -1 | sed "s/^/step $st $shape: /" >> $log
  done
done
say runs done
export ATTN_SWEEPS_FILE=$d/bars.txt
for r in 1 2; do
  ATTN_STEPS_DIR=build/old08 build/attn bench --sweep bars --out $o/t0.csv >> $log 2>&1
  build/attn bench --sweep bars --steps 07,08,09,10,11 --out $o/t1.csv >> $log 2>&1
  python3 bench/peer_sdpa.py --sweep bars --backends cudnn,flash --out $o/p.csv >> $log 2>&1
  [ $r = 1 ] && head -1 $o/t1.csv | sed 's/^/repeat,/' > $o/bars.csv && head -1 $o/p.csv | sed 's/^/repeat,/' > $o/peers_bars.csv
  sed 1d $o/t0.csv | sed "s/^/$r,/;s/08_tma_warp_specialized/old08_ce00115/" >> $o/bars.csv
  sed 1d $o/t1.csv | sed "s/^/$r,/" >> $o/bars.csv
  sed 1d $o/p.csv | sed "s/^/$r,/" >> $o/peers_bars.csv
  say bars round $r
done
rm -f $o/t0.csv $o/t1.csv $o/p.csv
timeout 220 build/attn check --step 08 --step 09 --step 10 --step 11 --csv $o/check_ladder.csv > $o/check_ladder.txt 2>&1
say check rc $?
timeout 150 bench/sanitize.sh 08 11 > $o/sanitize.txt 2>&1
say sanitize rc $?
