#!/usr/bin/env bash
# Nineteenth device call of step 12 (one GPU): the committed step with lse2's first two pairs read
# before the wait at D = 128 (call 18's pre0). Timing first, alone on the GPU:
#   standard12_bwd128.csv  the D = 128 backward rows of the standard sweep (std_bwd128.txt)
#   bars.csv         the eight bar shapes (bars.txt), then
#   peers_bars.csv   SDPA's cuDNN and flash backwards at the bar shapes, right after
#   ncu.txt          Nsight Compute of bwd_main<128> at 4,8,4096,4096,128, not causal
# then the checks, all at once:
#   check12.txt/.csv attn check --steps 12, the whole grid
#   gpu_tests.txt    the GPU tests
#   sanitize.txt     memcheck, racecheck, synccheck on call 16's nine shapes
# Usage (repo root): bench/experiments/12_backward/call19.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
ATTN_SWEEPS_FILE=$d/std_bwd128.txt build/attn bench --sweep standard --steps 12 --out $o/standard12_bwd128.csv 2>> $log; say standard bwd 128
ATTN_SWEEPS_FILE=$d/bars.txt build/attn bench --sweep bwdbars --steps 12 --out $o/bars.csv >> $log 2>&1; say bars
ATTN_SWEEPS_FILE=$d/bars.txt env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
M="sm__cycles_active.avg,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
{ echo "commit $sha"; echo "=== step 12: bwd_main<128> 4,8,4096,4096,128 non-causal"
  timeout 100 ncu --clock-control none --section SpeedOfLight --metrics $M -k regex:bwd_main -c 1 build/attn run --step 12 --backward --shape 4,8,4096,4096,128 --reps 1 2>&1 | grep -vE "^==PROF"
} > $o/ncu.txt 2>&1; say ncu
{ echo "commit $sha"; timeout 330 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1 &
{ echo "commit $sha"; timeout 330 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
mkdir -p $o/s; n=0
for tool in racecheck memcheck synccheck; do
  for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,129,1,64 --causal" \
            "1,2,1,129,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal" "1,1,700,300,64" "1,140,600,600,64 --causal"; do
    n=$((n+1))
    ( out=$(timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
      echo "step 12 $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt
      [ $rc != 0 ] && grep -E "Race reported|access at" <<<"$out" | head -6 >> $o/s/$(printf %02d $n).txt ) &
  done
done
wait
{ echo "commit $sha"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s
say done
