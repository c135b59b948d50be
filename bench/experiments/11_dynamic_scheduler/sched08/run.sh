#!/usr/bin/env bash
# One device call: step 08's dynamic persistent scheduler and sectioned causal order, A/B.
#   base: the committed kernel (62ca8dd: head-major, persistent only when not causal)
#   p0:   new order, one block per work tile   (-DATTN08_PERSISTENT=0)
#   p1:   new order, dynamic persistent scheduler (the default; build/steps)
#   p2:   new order, static-stride persistent  (-DATTN08_PERSISTENT=2)
# Run from the repo root with LD_LIBRARY_PATH set; writes under $1.
set -u
o=$1; d=bench/results/h200/sched08
export ATTN_SWEEPS_FILE=$d/sweep.txt
log=$o/r.log
{
echo "== check 08 (p1, the default build)"
build/attn check --step 08 --csv $o/check08.csv | tail -4
echo "== many-tile shapes vs step 00 / the fp64 reference (p1)"
for s in "4,8,4096,4096,128" "3,50,1000,777,128 --causal" "3,50,1000,777,64" "3,50,1000,777,64 --causal" \
         "2,5,8000,8100,128 --causal" "1,7,16384,16000,128 --causal" "2,9,8191,8192,64 --causal" \
         "2,70,1500,300,64 --causal" "1,133,1,1,64" "1,3,33,4097,128 --causal"; do
  echo "p1 $s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
echo "== sanitizers (p1)"
for tool in memcheck racecheck synccheck; do
  for s in "2,80,200,333,128 --causal" "1,200,129,127,64 --causal" "1,150,300,65,64" "1,40,1000,1000,128 --causal"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
  done
done
} > $log 2>&1
echo "== bench" >> $log
python3 bench/peer_sdpa.py --sweep bars --backends flash,cudnn --out $o/peers_a.csv >> $log 2>&1
for v in base p0 p2; do
  ATTN_STEPS_DIR=build/var/$v build/attn bench --sweep bars --steps 08 --out $o/$v.csv >> $log 2>&1
done
build/attn bench --sweep bars --steps 08 --out $o/p1.csv >> $log 2>&1
python3 bench/peer_sdpa.py --sweep bars --backends flash,cudnn --out $o/peers_b.csv >> $log 2>&1
for f in base p0 p1 p2 peers_a peers_b; do echo "-- $f"; cut -d, -f2,7-10,11,14 $o/$f.csv; done >> $log
tail -60 $log
