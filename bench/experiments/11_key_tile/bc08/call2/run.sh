#!/usr/bin/env bash
# Call 2 (issue 13): Q from registers. Call 1's ncu: Bc = 128 runs the tensor pipe at 69% against
# 73% at 160 / 176, while cuDNN reaches 73% at 128. Hypothesis: the S wgmma with both operands in
# shared memory reads A (2 KB) + B (Bc x 32 B) per k-step; with TMA's ~32 B/clock of writes that
# is ~128 B/clock at Bc = 128, the whole shared-memory bandwidth (117 at 176). With Q's A
# fragments in registers (ldmatrix once per work tile) the S wgmma reads K alone.
# Builds (build/var/<v>, from the working tree at the commit that adds this file):
#   base      step 08 as shipped
#   bc160     -DATTN08_BC128_FULL=160
#   rs128     -DATTN08_Q_RS=7 -DATTN08_BC128_FULL=128: Q in registers in every kernel, Bc = 128
#             at D = 128 (160 and 176 spill with Q in registers)
#   rs64b128  the same and Bc = 128 at D = 64 not causal too
# Files under $1: r.log, ab.csv, peers.csv, ncu.txt.
set -u
o=$1; d=bench/results/h200/bc08; log=$o/r.log; t0=$SECONDS
export ATTN_SWEEPS_FILE=$d/sweep2.txt
{
for v in rs128 rs64b128; do
  echo "== attn check --step 08, $v at $((SECONDS-t0)) s"
  ATTN_STEPS_DIR=build/var/$v build/attn check --step 08 | tail -2
  for s in "4,8,4096,4096,128" "1,7,16384,16000,128" "2,70,300,2900,128" "1,133,1,3000,128" "3,50,1000,777,64 --causal" "1,60,300,333,128 --causal"; do
    echo "$v $s: $(ATTN_STEPS_DIR=build/var/$v build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E '^check|^rate' | tr '\n' ' ')"
  done
done
} > $log 2>&1
for r in 1 2; do
  for v in base bc160 rs128 rs64b128; do
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
for v in rs128; do
  echo "=== $v, D=128, N=4096, non-causal"
  ATTN_STEPS_DIR=build/var/$v ncu --clock-control none $sec -k regex:attention_fwd build/attn run --step 08 --dtype bf16 --reps 1 --shape 4,8,4096,4096,128
done > $o/ncu.txt 2>&1
echo "== done at $((SECONDS-t0)) s" >> $log
ls $o
