#!/usr/bin/env bash
# One call: step 08 with stream-K for the last rounds of non-causal work tiles (the working tree
# after 74b6eb7) against 74b6eb7's step 08 (build/var/base), at most 8 files under $1:
#   r.log       check of the candidate (attn check --step 08, shapes that cut tiles against
#               step 00, GPU tests), compute-sanitizer on cut-tile shapes (Bc = 176 and 192)
#   ab.csv      the sweep below, base and candidate alternating, twice (columns variant, repeat,
#               then the sweep CSV's)
#   peers.csv   SDPA's flash and cuDNN on the same sweep, in the same call
#   check08.csv the check's rows
# Usage (repo root, LD_LIBRARY_PATH set): bench/results/h200/sk08/call1/run.sh OUT
set -u
o=$1; d=bench/results/h200/sk08; log=$o/r.log; t0=$SECONDS
{
echo "== attn check --step 08 at $((SECONDS-t0)) s"
build/attn check --step 08 --csv $o/check08.csv | tail -3
echo "== shapes that cut work tiles, against step 00 at $((SECONDS-t0)) s"
for s in "4,8,4096,4096,128" "4,8,4096,4096,64" "2,70,300,333,128" "1,133,200,1000,64" \
         "3,50,1000,777,64" "1,7,16384,16000,128" "1,133,1,1,64" "1,264,64,5,128" "1,135,65,4000,128" \
         "3,50,1000,777,64 --causal"; do
  echo "$s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
echo "== GPU tests at $((SECONDS-t0)) s"
build/tests/gpu 2>&1 | tail -3
echo "== compute-sanitizer at $((SECONDS-t0)) s"
for tool in memcheck racecheck synccheck; do
  for s in "1,60,300,333,128" "1,135,65,4000,128" "1,150,300,65,64" "2,40,200,333,128 --causal"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
    grep -E "Error|Warning|access" <<<"$r" | grep -v nvjet | head -4
  done
done
echo "== bench at $((SECONDS-t0)) s"
} > $log 2>&1
export ATTN_SWEEPS_FILE=$d/sweep.txt
for r in 1 2; do
  for v in base sk; do
    dir=build/var/$v; [ $v = sk ] && dir=build/steps
    ATTN_STEPS_DIR=$dir build/attn bench --sweep bars --steps 08 --out $o/tmp.csv >> $log 2>&1
    sed 1d $o/tmp.csv | sed "s/^/$v,$r,/" >> $o/ab.csv
  done
done
python3 bench/peer_sdpa.py --sweep bars --backends flash,cudnn --out $o/peers.csv >> $log 2>&1
rm -f $o/tmp.csv
echo "== done at $((SECONDS-t0)) s" >> $log
ls $o
