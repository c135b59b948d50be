#!/usr/bin/env bash
# One more call at the bars' shapes (issue 13): step 08 as shipped and SDPA's cuDNN and flash,
# alternating twice, for a fourth sample of the ratio. Files under $1: bars.csv (columns repeat,
# then the sweep CSV's), peers.csv (columns repeat, then peer_sdpa.py's), r.log.
set -u
o=$1; export ATTN_SWEEPS_FILE=bench/results/h200/sk08/bars/sweep.txt
for r in 1 2; do
  build/attn bench --sweep bars --steps 08 --out $o/t.csv >> $o/r.log 2>&1
  [ $r = 1 ] && head -1 $o/t.csv | sed 's/^/repeat,/' > $o/bars.csv
  sed 1d $o/t.csv | sed "s/^/$r,/" >> $o/bars.csv
  python3 bench/peer_sdpa.py --sweep bars --backends cudnn,flash --out $o/p.csv >> $o/r.log 2>&1
  [ $r = 1 ] && head -1 $o/p.csv | sed 's/^/repeat,/' > $o/peers.csv
  sed 1d $o/p.csv | sed "s/^/$r,/" >> $o/peers.csv
done
rm -f $o/t.csv $o/p.csv
