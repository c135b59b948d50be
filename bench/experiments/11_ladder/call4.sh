#!/usr/bin/env bash
# Fourth device call of the ladder's split (what the session's device time had left): SDPA's rows
# of the standard sweep that the third call did not reach (tail_sweep.txt: D = 128 causal and
# N = 32768 at D = 128; peers_tail.csv), the bar (step 11 against the old step 08, built from
# ce00115 into build/old08, with SDPA's cuDNN and flash at the eight bar shapes, alternating, two
# rounds: ab.csv, peers_ab.csv, column repeat), the Python tests, and the sanitizers on step 11.
# Usage (repo root, LD_LIBRARY_PATH set): bench/experiments/11_ladder/call4.sh OUT
set -u
o=$1; d=bench/experiments/11_ladder; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
say start
ATTN_SWEEPS_FILE=$d/tail_sweep.txt env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep standard --out $o/peers_tail.csv >> $log 2>&1
say peers tail
export ATTN_SWEEPS_FILE=$d/bars.txt
for r in 1 2; do
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
{ echo "commit $sha"; timeout 70 env -u LD_LIBRARY_PATH python3 -m pytest -q -rs -x tests/test_torch.py; } > $o/python_tests.txt 2>&1; say pytest rc $?
{ echo "commit $sha"; timeout 40 bench/sanitize.sh 11; } > $o/sanitize11.txt 2>&1; say sanitize rc $?
