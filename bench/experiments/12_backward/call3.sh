#!/usr/bin/env bash
# Third device call of step 12 (what the session's device time had left): the version whose
# consumer threads all release a stage (call 2's racecheck: the producer's bulk copy of lse2/Di
# into a stage raced the plain reads of lanes 1-31 when only lane 0 of a warp released it).
#   sanitize.txt     racecheck, memcheck, synccheck of the backward on the shapes that raced and
#                    on the edge shapes (one query, one key, causal Nq < Nk and Nq > Nk), in parallel
#   runs.txt         attn run --backward on edge and long shapes (check vs the CPU or step 00)
#   standard12.csv   step 12's rows of the standard sweep, forward and backward (alone on the GPU)
#   peers_bars.csv   SDPA's cuDNN and flash backwards at the bar shapes, right after
#   check12.txt/.csv attn check --steps 12 for the time left (the grid's order; cut by timeout)
# Usage (repo root): bench/experiments/12_backward/call3.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
say start
cs=compute-sanitizer
mkdir -p $o/s
n=0
for tool in racecheck memcheck synccheck; do
  for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,129,1,64 --causal" \
            "1,2,1,129,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal" "1,1,700,300,64"; do
    n=$((n+1))
    ( out=$(timeout 100 $cs --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
      echo "step 12 $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$n.txt
      [ $rc != 0 ] && grep -E "Race reported|access at" <<<"$out" | head -6 >> $o/s/$n.txt ) &
  done
done
{ echo "commit $sha"; for sh in "1,1,8192,8191,128" "1,2,4096,4096,64 --causal" "3,47,257,4099,128" "1,1,33700,2900,128 --causal" \
     "1,2,17,1000,64" "1,2,1000,17,128 --causal" "2,1,1,1,64" "1,1,1025,1000,128 --causal"; do
   timeout 60 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | grep -E "^problem|^check"; done; } > $o/runs.txt 2>&1 &
wait
{ echo "commit $sha"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s
say sanitize, runs
build/attn bench --sweep standard --steps 12 --out $o/standard12.csv >> $log 2>&1
say standard
ATTN_SWEEPS_FILE=$d/bars.txt python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1
say peers
{ echo "commit $sha"; timeout 95 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1
say check
