#!/usr/bin/env bash
# Second call: stream-K with 32-bit range arithmetic, computed only when it is on, and only where
# a work tile has >= 16 key tiles (the working tree, `sk`), against 74b6eb7's step 08 (`base`)
# and the same source built with -DATTN08_STREAMK=0 (`sk0`: what the restructured code costs
# without cutting any tile). At most 8 files under $1:
#   r2.log        check of sk (attn check --step 08, cut-tile shapes against step 00),
#                 compute-sanitizer on short cut-tile shapes (CPU reference: no cuBLAS under the
#                 tool), the bench progress
#   gpu_tests.txt build/tests/gpu --verbose (every step), whole output
#   ab2.csv       the sweep, base / sk0 / sk alternating, twice (columns variant, repeat, sweep CSV)
#   peers2.csv    SDPA's flash and cuDNN on the same sweep
#   check08.csv   the check's rows
#   ncu.txt       Nsight Compute, sk and cuDNN at D = 128, N = 4096, non-causal
set -u
o=$1; d=bench/results/h200/sk08; log=$o/r2.log; t0=$SECONDS
{
echo "== attn check --step 08 at $((SECONDS-t0)) s"
build/attn check --step 08 --csv $o/check08.csv | tail -3
echo "== shapes that cut work tiles, against step 00 or the CPU at $((SECONDS-t0)) s"
for s in "4,8,4096,4096,128" "4,8,4096,4096,64" "1,7,16384,16000,128" "1,135,65,4000,128" \
         "3,50,1000,3000,64" "1,133,1,3000,128" "1,140,20,3000,64" "2,70,300,2900,128" "4,8,2048,2048,128"; do
  echo "$s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
echo "== compute-sanitizer at $((SECONDS-t0)) s"
for tool in memcheck racecheck synccheck; do
  for s in "1,133,1,3000,128" "1,140,20,3000,64" "1,60,300,333,128" "2,40,200,333,128 --causal"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
    grep -E "Error|Warning|access" <<<"$r" | head -6
  done
done
echo "== bench at $((SECONDS-t0)) s"
} > $log 2>&1
build/tests/gpu --verbose > $o/gpu_tests.txt 2>&1
echo "== GPU tests rc $? at $((SECONDS-t0)) s" >> $log
export ATTN_SWEEPS_FILE=$d/sweep.txt
for r in 1 2; do
  for v in base sk0 sk; do
    dir=build/var/$v; [ $v = sk ] && dir=build/steps
    ATTN_STEPS_DIR=$dir build/attn bench --sweep bars --steps 08 --out $o/tmp.csv >> $log 2>&1
    sed 1d $o/tmp.csv | sed "s/^/$v,$r,/" >> $o/ab2.csv
  done
done
python3 bench/peer_sdpa.py --sweep bars --backends flash,cudnn --out $o/peers2.csv >> $log 2>&1
rm -f $o/tmp.csv
echo "== ncu at $((SECONDS-t0)) s" >> $log
sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section Occupancy"
{
echo "=== step 08 (sk), D=128, N=4096, non-causal"
ncu --clock-control none $sec -k regex:attention_fwd build/attn run --step 08 --dtype bf16 --reps 1 --shape 4,8,4096,4096,128
echo "=== SDPA cuDNN, the same problem (third launch)"
ncu --clock-control none $sec -k regex:flash_fprop --launch-skip 2 --launch-count 1 python3 build/cudnn_one.py
} > $o/ncu.txt 2>&1
echo "== done at $((SECONDS-t0)) s" >> $log
ls $o
