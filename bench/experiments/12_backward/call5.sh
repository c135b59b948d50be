#!/usr/bin/env bash
# Fifth device call of step 12: dQ over each warpgroup's own keys (no barrier between the two
# warpgroups), against the committed step (build/steps, call 4's "steps").
#   ownE  two 64 x 64 dQ pieces per warpgroup, one after the other in the same registers
#   ownO  the two pieces overlapped (piece 1 computed while piece 0 is staged; ptxas spills 68 B)
# runs.txt: checked edge runs of each; sanitize.txt: racecheck of each on two shapes;
# bars.csv + peers_bars.csv: the bar shapes, then cuDNN and flash right after; sass.txt: where
# the spills sit in bwd_main<128> (HGMMA and spill lines with their offsets).
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
dir() { [ $1 = steps ] && echo build/steps || echo build/var_$1; }
say start
for v in ownE ownO; do
  { echo "variant $v, commit $sha"
    for sh in "1,2,1000,17,128 --causal" "1,1,300,65,128 --causal" "1,2,65,300,64 --causal" "3,47,257,4099,128" \
              "1,2,129,127,64 --causal" "2,4,1024,1024,128 --causal" "1,2,1,129,128" "2,1,1,1,64" "1,1,8192,8191,128" \
              "1,2,4096,4096,64 --causal" "2,3,700,900,64"; do
      ATTN_STEPS_DIR=$(dir $v) timeout 60 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | grep -E "^problem|^check|rror"
    done; } > $w/run_$v.txt 2>&1 &
  n=0
  for sh in "1,1,300,65,128 --causal" "1,2,130,1000,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal"; do
    n=$((n+1))
    ( out=$(ATTN_STEPS_DIR=$(dir $v) timeout 150 compute-sanitizer --tool racecheck --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
      echo "$v racecheck --backward $sh: rc $rc; $(grep -E 'RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $w/s_$v$n.txt
      [ $rc != 0 ] && grep -E "Race reported|access at" <<<"$out" | head -6 >> $w/s_$v$n.txt ) &
  done
done
for v in ownE ownO; do
  echo "=== $v"
  cuobjdump --dump-sass $(dir $v)/12_backward_wgmma.so | awk '/Function : _Z8bwd_mainILi128/{f=1;next} /Function : /{f=0} f' | grep -E "HGMMA|STL|LDL|BAR|SYNCS|EXIT|BRA" | sed 's/ *\/\* 0x[0-9a-f]* \*\/ *$//' | cut -c1-110
done > $o/sass.txt 2>&1
wait
cat $w/run_*.txt > $o/runs.txt; { echo "commit $sha"; cat $w/s_*.txt; } > $o/sanitize.txt
say runs, sanitize
export ATTN_SWEEPS_FILE=$d/bars.txt
for v in ownE steps ownO; do
  ATTN_STEPS_DIR=$(dir $v) build/attn bench --sweep bwdbars --steps 12 --out $w/bars_$v.csv >> $log 2>&1
  say bars $v
done
env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1
unset ATTN_SWEEPS_FILE
say peers
{ head -1 $w/bars_steps.csv; for v in steps ownE ownO; do sed 1d $w/bars_$v.csv | sed "s/12_backward_wgmma/12_$v/"; done; } > $o/bars.csv
rm -rf $w
