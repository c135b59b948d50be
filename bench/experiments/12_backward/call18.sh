#!/usr/bin/env bash
# Eighteenth device call of step 12 (one GPU), on ee2eca7's step with the harness's new gradient
# floor (dP - D's fp32 spread, common/reference.c). Timing first, alone on the GPU:
#   bars.csv        the four D = 128 bar shapes: the step, then variants/make_pre.py's pre (lse2 and
#                   Di loaded before their waits), pre1 (lse2 only), pre0 (lse2's first two float2),
#                   then the step again; peers_bars.csv  SDPA's cuDNN and flash right after
# then, at once:
#   gpu_tests.txt   the GPU tests under the new floor (call 17's one failure was the old floor's)
#   sanitize.txt    racecheck and synccheck of pre and pre0 on three D = 128 shapes
# Build first: build/var_{pre,pre1,pre0}/ from make_pre.py, each beside 00_materialized.so.
# Usage (repo root): bench/experiments/12_backward/call18.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
grep -E '^#|,128 ' $d/bars.txt > $w/b128.txt
dir() { case $1 in step*) echo build/steps;; *) echo build/var_$1;; esac; }
for v in step pre pre1 pre0 step2; do
  ATTN_SWEEPS_FILE=$w/b128.txt ATTN_STEPS_DIR=$(dir $v) build/attn bench --sweep bwdbars --steps 12 --out $w/$v.csv >> $log 2>&1; say $v
done
{ head -1 $w/step.csv; for v in step pre pre1 pre0 step2; do sed 1d $w/$v.csv | sed "s/12_backward_wgmma/12_$v/"; done; } > $o/bars.csv
ATTN_SWEEPS_FILE=$w/b128.txt env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
{ echo "commit $sha"; timeout 280 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
mkdir -p $o/s; n=0
for v in pre pre0; do for tool in racecheck synccheck; do
  for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,1,129,128"; do
    n=$((n+1))
    ( out=$(ATTN_STEPS_DIR=build/var_$v timeout 250 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
      echo "$v $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt ) &
  done
done; done
wait
{ echo "commit $sha + variants/make_pre.py"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s $w
say done
