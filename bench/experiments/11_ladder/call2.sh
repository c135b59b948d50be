#!/usr/bin/env bash
# Second device call of the ladder's split: the correctness record of the commit (its files
# become bench/results/h200/: gpu_tests.txt, check.txt and check.csv, sanitize.txt, mutant.txt,
# python_tests.txt, train_demo.txt, cli.txt) and the bar, step 11 against the old step 08
# (built from ce00115 into build/old08) and SDPA's cuDNN and flash at the eight bar shapes,
# alternating, three rounds (ab.csv, peers_ab.csv; column repeat).
# Usage (repo root, LD_LIBRARY_PATH set): bench/experiments/11_ladder/call2.sh OUT
set -u
o=$1; d=bench/experiments/11_ladder; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
say start
sha=$(cat .git-sha 2>/dev/null || echo unknown)
build/tests/gpu --verbose > $o/gpu_tests.txt 2>&1; say gpu tests rc $?
bash tests/mutant_tile.sh > $o/mutant.txt 2>&1; say mutant rc $?
{ echo "commit $sha"; timeout 240 build/attn check --csv $o/check.csv; } > $o/check.txt 2>&1; say check rc $?
{ echo "commit $sha"; timeout 150 bench/sanitize.sh 06 08 09 10 11; } > $o/sanitize.txt 2>&1; say sanitize rc $?
export ATTN_SWEEPS_FILE=$d/bars.txt
for r in 1 2 3; do
  ATTN_STEPS_DIR=build/old08 build/attn bench --sweep bars --out $o/t0.csv >> $log 2>&1
  build/attn bench --sweep bars --steps 11 --out $o/t1.csv >> $log 2>&1
  python3 bench/peer_sdpa.py --sweep bars --backends cudnn,flash --out $o/p.csv >> $log 2>&1
  [ $r = 1 ] && head -1 $o/t1.csv | sed 's/^/repeat,/' > $o/ab.csv && head -1 $o/p.csv | sed 's/^/repeat,/' > $o/peers_ab.csv
  sed 1d $o/t0.csv | sed "s/^/$r,/;s/08_tma_warp_specialized/old08_ce00115/" >> $o/ab.csv
  sed 1d $o/t1.csv | sed "s/^/$r,/" >> $o/ab.csv
  sed 1d $o/p.csv | sed "s/^/$r,/" >> $o/peers_ab.csv
  say bars round $r
done
unset ATTN_SWEEPS_FILE
rm -f $o/t0.csv $o/t1.csv $o/p.csv
{ echo "commit $sha"; timeout 60 python3 -m pytest -q -rs tests/test_torch.py; } > $o/python_tests.txt 2>&1; say pytest rc $?
{ echo "commit $sha"; timeout 30 python3 python/train_demo.py; } > $o/train_demo.txt 2>&1; say demo rc $?
{ echo "commit $sha"; bench/cli_examples.sh; } > $o/cli.txt 2>&1; say cli rc $?
tar czf $o/extra.tgz -C $o r.log >/dev/null 2>&1
