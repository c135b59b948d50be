#!/usr/bin/env bash
# Fourth device call of the ladder's split: the single-head sweep (steps and SDPA's backends;
# single_head.csv, peers_single_head.csv and its log for bench/results/h200/), the bar: step 11
# against the old step 08 (built from ce00115 into build/old08) with SDPA's cuDNN and flash at
# the eight bar shapes, alternating, three rounds (ab.csv, peers_ab.csv; column repeat), then
# the Python tests, the training demo and the CLI's record (python_tests.txt, train_demo.txt,
# cli.txt for bench/results/h200/).
# Usage (repo root, LD_LIBRARY_PATH set): bench/experiments/11_ladder/call4.sh OUT
set -u
o=$1; d=bench/experiments/11_ladder; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
say start
echo "== build/attn bench --sweep single_head" > $o/bench_single_head.log
build/attn bench --sweep single_head --out $o/single_head.csv 2>> $o/bench_single_head.log
echo "== python3 bench/peer_sdpa.py --sweep single_head" >> $o/bench_single_head.log
env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep single_head --out $o/peers_single_head.csv 2>> $o/bench_single_head.log
say single_head
export ATTN_SWEEPS_FILE=$d/bars.txt
for r in 1 2 3; do
  ATTN_STEPS_DIR=build/old08 build/attn bench --sweep bars --out $o/t0.csv >> $log 2>&1
  build/attn bench --sweep bars --steps 11 --out $o/t1.csv >> $log 2>&1
  env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bars --backends cudnn,flash --out $o/p.csv >> $log 2>&1
  [ $r = 1 ] && head -1 $o/t1.csv | sed 's/^/repeat,/' > $o/ab.csv && head -1 $o/p.csv | sed 's/^/repeat,/' > $o/peers_ab.csv
  sed 1d $o/t0.csv | sed "s/^/$r,/;s/08_tma_warp_specialized/old08_ce00115/" >> $o/ab.csv
  sed 1d $o/t1.csv | sed "s/^/$r,/" >> $o/ab.csv
  sed 1d $o/p.csv | sed "s/^/$r,/" >> $o/peers_ab.csv
  say bars round $r
done
unset ATTN_SWEEPS_FILE
rm -f $o/t0.csv $o/t1.csv $o/p.csv
{ echo "commit $sha"; timeout 90 env -u LD_LIBRARY_PATH python3 -m pytest -q -rs tests/test_torch.py; } > $o/python_tests.txt 2>&1; say pytest rc $?
{ echo "commit $sha"; timeout 30 env -u LD_LIBRARY_PATH python3 python/train_demo.py; } > $o/train_demo.txt 2>&1; say demo rc $?
{ echo "commit $sha"; timeout 60 bench/cli_examples.sh; } > $o/cli.txt 2>&1; say cli rc $?
