#!/usr/bin/env bash
# Third call: the work-tile number handed over through named barriers (racecheck-clean), A/B/A/B
# against the committed kernel, with both kernels' SASS for the non-causal slowdown seen in
# sched08/ and sched08b/. At most 8 files under $1.
set -u
o=$1; d=bench/results/h200/sched08c
export ATTN_SWEEPS_FILE=$d/sweep.txt
log=$o/r.log
t0=$SECONDS
{
cuobjdump -sass build/var/base/08_tma_warp_specialized.so | gzip > $o/base.sass.gz
cuobjdump -sass build/steps/08_tma_warp_specialized.so | gzip > $o/p1nb.sass.gz
echo "== check 08 (p1nb) at $((SECONDS-t0)) s"
build/attn check --step 08 --csv $o/check08.csv | tail -4
echo "== many-tile shapes (p1nb) at $((SECONDS-t0)) s"
for s in "4,8,4096,4096,128" "3,50,1000,777,64" "3,50,1000,777,64 --causal" "2,5,8000,8100,128 --causal" \
         "1,7,16384,16000,128 --causal" "2,9,8191,8192,64 --causal" "1,133,1,1,64" "1,3,33,4097,128 --causal"; do
  echo "p1nb $s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
echo "== sanitizers (p1nb) at $((SECONDS-t0)) s"
for tool in memcheck racecheck synccheck; do
  for s in "2,80,200,333,128 --causal" "1,150,300,65,64" "1,40,1000,1000,128 --causal" "1,30,700,1000,64"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
    grep -E "Error|Warning|access" <<<"$r" | head -8
  done
done
echo "== bench at $((SECONDS-t0)) s"
} > $log 2>&1
for r in 1 2; do
  ATTN_STEPS_DIR=build/var/base build/attn bench --sweep bars --steps 08 --out $o/base_$r.csv >> $log 2>&1
  build/attn bench --sweep bars --steps 08 --out $o/p1nb_$r.csv >> $log 2>&1
done
echo "== done at $((SECONDS-t0)) s" >> $log
ls $o | wc -l; tail -2 $log
