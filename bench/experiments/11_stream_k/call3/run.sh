#!/usr/bin/env bash
# Third call: the ragged last key tile at its own width (64 or 128), with stream-K (`nl`, the
# working tree) and without (`nl0`: -DATTN08_STREAMK=0), against 74b6eb7 (`base`) and e3b5f3f
# (`sk`: stream-K alone). At most 8 files under $1:
#   r3.log       check of nl (attn check --step 08; ragged shapes of every narrow width against
#                the CPU or step 00; the deliberate-bug build on two of them), compute-sanitizer
#   ab3.csv      the sweep, base / sk / nl0 / nl alternating, twice
#   peers3.csv   SDPA's flash and cuDNN on the same sweep
#   check08.csv  the check's rows
set -u
o=$1; d=bench/results/h200/sk08; log=$o/r3.log; t0=$SECONDS
{
echo "== attn check --step 08 at $((SECONDS-t0)) s"
build/attn check --step 08 --csv $o/check08.csv | tail -3
echo "== ragged and cut shapes at $((SECONDS-t0)) s"
for s in "1,1,64,200,128" "1,2,100,241,128" "1,2,100,1000,128" "1,2,100,777,64" "1,3,129,4096,128" \
         "1,3,65,2048,64" "1,2,33,353,128" "1,133,1,3000,128" "4,8,4096,4096,128" "4,8,4096,4096,64" \
         "1,7,16384,16000,128" "2,70,300,2900,128" "3,50,1000,3000,64" "4,8,2048,2048,128"; do
  echo "$s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
for s in "1,1,64,200,128" "1,3,129,4096,128"; do
  echo "bug build $s: $(ATTN_STEPS_DIR=build/var/bug build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check' | tr '\n' ' ')"
done
echo "== compute-sanitizer at $((SECONDS-t0)) s"
for tool in memcheck racecheck synccheck; do
  for s in "1,133,1,3000,128" "1,40,100,241,128" "1,60,300,333,128" "1,150,300,65,64" "2,40,200,333,128 --causal"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
    grep -E "Error|Warning|access" <<<"$r" | head -6
  done
done
echo "== bench at $((SECONDS-t0)) s"
} > $log 2>&1
export ATTN_SWEEPS_FILE=$d/sweep.txt
for r in 1 2; do
  for v in base sk nl0 nl; do
    dir=build/var/$v; [ $v = nl ] && dir=build/steps
    ATTN_STEPS_DIR=$dir build/attn bench --sweep bars --steps 08 --out $o/tmp.csv >> $log 2>&1
    sed 1d $o/tmp.csv | sed "s/^/$v,$r,/" >> $o/ab3.csv
  done
done
python3 bench/peer_sdpa.py --sweep bars --backends flash,cudnn --out $o/peers3.csv >> $log 2>&1
rm -f $o/tmp.csv
echo "== done at $((SECONDS-t0)) s" >> $log
ls $o
