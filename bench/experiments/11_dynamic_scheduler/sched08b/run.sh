#!/usr/bin/env bash
# Second call: why the new kernel ran 2-5% slower when not causal (sched08/). A/B/A/B of
#   base: the committed kernel (62ca8dd)
#   p1:   the scheduler with lane 0 reading work_slot (build/steps; the candidate)
#   p1sw: the scheduler with a __syncwarp before each empty_q release (sched08's p1)
# plus SASS instruction counts of each, the check and the sanitizers on p1.
set -u
o=$1; d=bench/results/h200/sched08b
export ATTN_SWEEPS_FILE=$d/sweep.txt
log=$o/r.log
{
echo "== SASS counts (all four instantiations together)"
for v in build/var/base build/steps build/var/p1sw; do
  sass=$(cuobjdump -sass $v/08_tma_warp_specialized.so)
  echo "$v: lines $(wc -l <<<"$sass") HGMMA $(grep -c HGMMA <<<"$sass") WARPSYNC $(grep -c WARPSYNC <<<"$sass") BSSY $(grep -c BSSY <<<"$sass") WARPGROUP $(grep -c WARPGROUP <<<"$sass") DEPBAR $(grep -c DEPBAR <<<"$sass") MUFU.EX2 $(grep -c MUFU.EX2 <<<"$sass")"
done
echo "== check 08 (p1)"
build/attn check --step 08 --csv $o/check08.csv | tail -4
echo "== many-tile shapes (p1)"
for s in "4,8,4096,4096,128" "3,50,1000,777,64" "3,50,1000,777,64 --causal" "2,5,8000,8100,128 --causal" \
         "1,7,16384,16000,128 --causal" "1,133,1,1,64" "1,3,33,4097,128 --causal"; do
  echo "p1 $s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
echo "== sanitizers (p1)"
for tool in memcheck racecheck synccheck; do
  for s in "2,80,200,333,128 --causal" "1,150,300,65,64" "1,40,1000,1000,128 --causal"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
    [ $tool = racecheck ] && grep -E "Error|Warning|access|Race" <<<"$r" | head -16
  done
done
} > $log 2>&1
echo "== bench" >> $log
python3 bench/peer_sdpa.py --sweep bars --backends cudnn --out $o/peers_a.csv >> $log 2>&1
for r in 1 2; do
  for v in base p1 p1sw; do
    if [ $v = p1 ]; then dir=build/steps; else dir=build/var/$v; fi
    ATTN_STEPS_DIR=$dir build/attn bench --sweep bars --steps 08 --out $o/${v}_$r.csv >> $log 2>&1
  done
done
for f in base_1 p1_1 p1sw_1 base_2 p1_2 p1sw_2 peers_a; do echo "-- $f"; cut -d, -f2,7-10,11,14 $o/$f.csv; done >> $log
tail -3 $log
