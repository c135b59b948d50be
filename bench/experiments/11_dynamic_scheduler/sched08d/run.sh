#!/usr/bin/env bash
# Fourth call: (1) bisect the 2-4% non-causal slowdown of the new kernel: the committed kernel
# (base) plus, cumulatively, A the two new kernel arguments (unused), B the sectioned work order
# (G = 1 when not causal: the same tiles), C the ping-pong's new ending; p1s the candidate.
# (2) p1s: the work-tile number handed over at a bar.sync meeting (two slots), racecheck.
set -u
o=$1; d=bench/results/h200/sched08d
log=$o/r.log
t0=$SECONDS
{
echo "== check 08 (p1s) at $((SECONDS-t0)) s"
build/attn check --step 08 --csv $o/check08.csv | tail -3
for s in "4,8,4096,4096,128" "3,50,1000,777,64 --causal" "2,5,8000,8100,128 --causal" "1,7,16384,16000,128 --causal" "1,133,1,1,64" "1,3,33,4097,128 --causal"; do
  echo "p1s $s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
echo "== sanitizers (p1s) at $((SECONDS-t0)) s"
for tool in racecheck synccheck memcheck; do
  for s in "2,80,200,333,128 --causal" "1,150,300,65,64" "1,30,700,1000,64" "1,40,1000,1000,128 --causal"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
    grep -E "Error|Warning|access" <<<"$r" | grep -v nvjet | head -4
  done
done
echo "== bench at $((SECONDS-t0)) s"
} > $log 2>&1
export ATTN_SWEEPS_FILE=$d/sweep.txt
for r in 1 2; do
  for v in base A B C p1s; do
    dir=build/var/$v; [ $v = p1s ] && dir=build/steps
    ATTN_STEPS_DIR=$dir build/attn bench --sweep bars --steps 08 --out $o/tmp.csv >> $log 2>&1
    sed 1d $o/tmp.csv | sed "s/^/$v,$r,/" >> $o/bisect.csv
  done
done
ATTN_SWEEPS_FILE=bench/results/h200/sched08/sweep.txt build/attn bench --sweep bars --steps 08 --out $o/p1s_full.csv >> $log 2>&1
ATTN_SWEEPS_FILE=bench/results/h200/sched08/sweep.txt python3 bench/peer_sdpa.py --sweep bars --backends cudnn --out $o/peers.csv >> $log 2>&1
rm -f $o/tmp.csv
echo "== done at $((SECONDS-t0)) s" >> $log
ls $o
