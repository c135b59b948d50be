#!/usr/bin/env bash
# Fourth device call of step 12: an A/B of the tile loop's schedule, all variants in one call.
#   steps  HEAD's tree: the pre-pass and the dQ conversion rewritten (16-byte loads, dQ rows
#          out through shared memory); the main kernel as before
#   base   the committed step 12 (call 3's version)
#   rot    base + the loop rotated (make_rot.py: the next tile's S^T behind this tile's dQ)
#   rotpp  steps + the rotation
#   rel    rotpp + one release per warpgroup after a bar.sync (make_rel.py)
# runs.txt: checked runs of each variant on edge shapes; sanitize.txt: racecheck and synccheck of
# rel; bars_*.csv: each variant at the bar shapes, then peers_bars.csv (cuDNN, flash) right after;
# ncu.txt: the three kernels' durations (base, steps, rel), and rel's main kernel in full.
# Usage (repo root): bench/experiments/12_backward/call4.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
dir() { [ $1 = steps ] && echo build/steps || echo build/var_$1; }
say start
for v in steps base rot rotpp rel; do
  { echo "variant $v, commit $sha"
    for sh in "1,2,1000,17,128 --causal" "1,1,300,65,128 --causal" "1,2,65,300,64 --causal" "3,47,257,4099,128" \
              "1,2,129,127,64 --causal" "2,4,1024,1024,128 --causal" "1,2,1,129,128" "2,1,1,1,64" "1,1,8192,8191,128" \
              "1,2,4096,4096,64 --causal"; do
      ATTN_STEPS_DIR=$(dir $v) timeout 60 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | grep -E "^problem|^check|rror"
    done; } > $w/run_$v.txt 2>&1 &
done
n=0
for tool in racecheck synccheck; do
  for sh in "1,1,300,65,128 --causal" "1,2,130,1000,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal"; do
    n=$((n+1))
    ( out=$(ATTN_STEPS_DIR=build/var_rel timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
      echo "rel $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $w/s$n.txt
      [ $rc != 0 ] && grep -E "Race reported|access at" <<<"$out" | head -6 >> $w/s$n.txt ) &
  done
done
wait
cat $w/run_*.txt > $o/runs.txt; { echo "commit $sha"; cat $w/s*.txt; } > $o/sanitize.txt
say runs, sanitize
export ATTN_SWEEPS_FILE=$d/bars.txt
for v in steps rotpp rel base rot; do
  ATTN_STEPS_DIR=$(dir $v) build/attn bench --sweep bwdbars --steps 12 --out $w/bars_$v.csv >> $log 2>&1
  say bars $v
done
env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1
unset ATTN_SWEEPS_FILE
say peers
{ head -1 $w/bars_steps.csv; for v in steps base rot rotpp rel; do sed 1d $w/bars_$v.csv | sed "s/12_backward_wgmma/12_$v/"; done; } > $o/bars.csv
{
  echo "commit $sha"
  for v in base steps rel; do
    echo "=== $v: bwd kernels 4,8,4096,4096,128 non-causal"
    ATTN_STEPS_DIR=$(dir $v) timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:bwd_ -c 3 build/attn run --step 12 --backward --shape 4,8,4096,4096,128 --reps 1 2>&1 | grep -E "bwd_|duration"
  done
  echo "=== rel: bwd_main 4,8,4096,4096,128 non-causal, full"
  ATTN_STEPS_DIR=build/var_rel timeout 90 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats \
    --metrics sm__cycles_active.avg,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active -k regex:bwd_main -c 1 \
    build/attn run --step 12 --backward --shape 4,8,4096,4096,128 --reps 1 2>&1
  echo "=== rotpp sass: spills in bwd_main<128>"
  cuobjdump --dump-sass build/var_rotpp/12_backward_wgmma.so | awk '/Function : _Z8bwd_mainILi128/{f=1;next} /Function : /{f=0} f' | grep -nE "STL|LDL" | head
} > $o/ncu.txt 2>&1
say ncu
