#!/usr/bin/env bash
# Second call for the shipped step 08 (same build as run.sh's; run.sh hit the 600 s limit during
# the peers' sweep, 195 of 208 rows, before the Python tests, and its GPU-test lines were
# filtered away). Files under $1:
#   gpu_tests.txt   build/tests/gpu --verbose, whole output
#   peers_tail.csv  SDPA's backends on the two standard-sweep lines run.sh did not finish
#                   (sweep_tail.txt: D = 128, N = 16384 causal and N = 32768 not causal)
#   bars.csv, peers_bars.csv  step 08 and SDPA's cuDNN and flash at the bars' shapes, alternating
#                   twice (columns repeat, then the sweep CSV's)
#   r.log           progress, the Python tests, the training demo
# Usage (repo root, LD_LIBRARY_PATH set): bench/results/h200/bc08/final/run2.sh OUT
set -u
o=$1; d=bench/results/h200/bc08/final; t0=$SECONDS; log=$o/r.log
build/tests/gpu --verbose > $o/gpu_tests.txt 2>&1
echo "== GPU tests rc $? at $((SECONDS-t0)) s" > $log
{
echo "== Python tests at $((SECONDS-t0)) s"
timeout 40 python3 -m pytest -q tests/test_torch.py 2>&1 | tail -4
echo "== training demo at $((SECONDS-t0)) s"
timeout 15 python3 python/train_demo.py 2>&1 | tail -3
echo "== bars at $((SECONDS-t0)) s"
} >> $log 2>&1
export ATTN_SWEEPS_FILE=bench/results/h200/sk08/bars/sweep.txt
for r in 1 2; do
  build/attn bench --sweep bars --steps 08 --out $o/t.csv >> $log 2>&1
  [ $r = 1 ] && head -1 $o/t.csv | sed 's/^/repeat,/' > $o/bars.csv
  sed 1d $o/t.csv | sed "s/^/$r,/" >> $o/bars.csv
  python3 bench/peer_sdpa.py --sweep bars --backends cudnn,flash --out $o/p.csv >> $log 2>&1
  [ $r = 1 ] && head -1 $o/p.csv | sed 's/^/repeat,/' > $o/peers_bars.csv
  sed 1d $o/p.csv | sed "s/^/$r,/" >> $o/peers_bars.csv
done
rm -f $o/t.csv $o/p.csv
echo "== peers' tail at $((SECONDS-t0)) s" >> $log
ATTN_SWEEPS_FILE=$d/sweep_tail.txt python3 bench/peer_sdpa.py --sweep standard --out $o/peers_tail.csv >> $log 2>&1
echo "== done at $((SECONDS-t0)) s" >> $log
ls $o
