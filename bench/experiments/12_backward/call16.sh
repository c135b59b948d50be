#!/usr/bin/env bash
# Sixteenth device call of step 12 (one GPU): the committed step with causal blocks in sections of
# heads (bwd_heads_per_section; call 14's group variant, the same sections at the bar shapes).
# Timing first, alone on the GPU:
#   standard12_causal_bwd.csv  the causal backward rows of the standard sweep (std_causal_bwd.txt)
#   bars.csv         the eight bar shapes (bars.txt), then
#   peers_bars.csv   SDPA's cuDNN and flash backwards at the bar shapes, right after
# then the checks, all at once:
#   check12.txt/.csv attn check --steps 12, the whole grid
#   sanitize.txt     memcheck, racecheck, synccheck on call 3's 8 shapes and a causal one of 2 sections
#   runs.txt         attn run --backward on causal shapes of 2, 3 and 11 sections and call 6's edge/long ones
# Usage (repo root): bench/experiments/12_backward/call16.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
ATTN_SWEEPS_FILE=$d/std_causal_bwd.txt build/attn bench --sweep standard --steps 12 --out $o/standard12_causal_bwd.csv 2>> $log; say standard causal bwd
ATTN_SWEEPS_FILE=$d/bars.txt build/attn bench --sweep bwdbars --steps 12 --out $o/bars.csv >> $log 2>&1; say bars
ATTN_SWEEPS_FILE=$d/bars.txt env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
{ echo "commit $sha"; timeout 270 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1 &
mkdir -p $o/s; n=0
for tool in racecheck memcheck synccheck; do
  for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,129,1,64 --causal" \
            "1,2,1,129,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal" "1,1,700,300,64" "1,140,600,600,64 --causal"; do
    n=$((n+1))
    ( out=$(timeout 250 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
      echo "step 12 $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt
      [ $rc != 0 ] && grep -E "Race reported|access at" <<<"$out" | head -6 >> $o/s/$(printf %02d $n).txt ) &
  done
done
{ echo "commit $sha"; for sh in "1,140,600,600,64 --causal" "2,70,1000,1000,128 --causal" "4,8,4096,4096,128 --causal" \
     "1,1,8192,8191,128" "1,2,4096,4096,64 --causal" "3,47,257,4099,128" "1,1,33700,2900,128 --causal" \
     "1,2,17,1000,64" "1,2,1000,17,128 --causal" "2,1,1,1,64" "1,1,1025,1000,128 --causal" "1,2,65,300,64 --causal"; do
   timeout 60 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | grep -E "^problem|^check"; done; } > $o/runs.txt 2>&1
say runs
wait
{ echo "commit $sha"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s
say done
