#!/usr/bin/env bash
# Call 1 (issue 13, D = 128 not causal): the key tile per problem, and what stream-K's memset
# costs. Builds (build/var/<v>, all from the working tree at the commit that adds this file):
#   base     step 08 as shipped (Bc = 176 at D = 128 not causal)
#   bc160    -DATTN08_BC128_FULL=160 (N = 4096: 26 tiles = 4160 keys computed, against 4224)
#   bc128    -DATTN08_BC128_FULL=128 (N = 4096: exact)
#   nm       -DATTN08_SK_NOMEMSET=1: the counters reset by their second arriver, no memset
#            before the launch (timing only: correct only if the workspace starts at 0)
#   bc160nm  both
# Files under $1: r.log (checks, progress), ab.csv (variant, repeat, sweep CSV), peers.csv
# (repeat, peer_sdpa.py CSV), ncu.txt (base, bc160, bc128 at N = 4096).
set -u
o=$1; d=bench/results/h200/bc08; log=$o/r.log; t0=$SECONDS
export ATTN_SWEEPS_FILE=$d/sweep.txt
{
for v in bc160 bc128; do
  echo "== attn check --step 08, $v at $((SECONDS-t0)) s"
  ATTN_STEPS_DIR=build/var/$v build/attn check --step 08 | tail -2
  for s in "4,8,4096,4096,128" "1,7,16384,16000,128" "2,70,300,2900,128" "1,133,1,3000,128"; do
    echo "$v $s: $(ATTN_STEPS_DIR=build/var/$v build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E '^check|^rate' | tr '\n' ' ')"
  done
done
} > $log 2>&1
for r in 1 2; do
  for v in base bc160 bc128 nm bc160nm; do
    ATTN_STEPS_DIR=build/var/$v build/attn bench --sweep bars --steps 08 --out $o/t.csv >> $log 2>&1
    [ -f $o/ab.csv ] || head -1 $o/t.csv | sed 's/^/variant,repeat,/' > $o/ab.csv
    sed 1d $o/t.csv | sed "s/^/$v,$r,/" >> $o/ab.csv
  done
  python3 bench/peer_sdpa.py --sweep bars --backends cudnn,flash --out $o/p.csv >> $log 2>&1
  [ -f $o/peers.csv ] || head -1 $o/p.csv | sed 's/^/repeat,/' > $o/peers.csv
  sed 1d $o/p.csv | sed "s/^/$r,/" >> $o/peers.csv
done
rm -f $o/t.csv $o/p.csv
echo "== ncu at $((SECONDS-t0)) s" >> $log
sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg"
for v in base bc160 bc128; do
  echo "=== $v, D=128, N=4096, non-causal"
  ATTN_STEPS_DIR=build/var/$v ncu --clock-control none $sec -k regex:attention_fwd build/attn run --step 08 --dtype bf16 --reps 1 --shape 4,8,4096,4096,128
done > $o/ncu.txt 2>&1
echo "== done at $((SECONDS-t0)) s" >> $log
ls $o
