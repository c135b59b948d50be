#!/usr/bin/env bash
# Tenth device call of step 12: the dQ staging taken apart (make_ablate.py: nofence, nobar1,
# each may make dQ wrong; stage2, a correct double-buffered staging at D = 128) against the step
# (timed first and last), at N = 4096 (ablate.txt). ablate.csv: every row; r.log: progress.
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
dir() { case $1 in steps*) echo build/steps;; *) echo build/var_$1;; esac; }
export ATTN_SWEEPS_FILE=$d/ablate.txt
for v in steps nofence nobar1 stage2 steps2; do
  ATTN_STEPS_DIR=$(dir $v) build/attn bench --sweep ablate --steps 12 --out $w/$v.csv >> $log 2>&1
  say $v
done
{ head -1 $w/steps.csv; for v in steps nofence nobar1 stage2 steps2; do sed 1d $w/$v.csv | sed "s/12_backward_wgmma/12_$v/"; done; } > $o/ablate.csv
rm -rf $w
