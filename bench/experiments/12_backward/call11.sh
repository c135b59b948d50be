#!/usr/bin/env bash
# Eleventh device call of step 12: the one-way proxy fence (fence_proxy_async_release_smem) before
# the dQ staging's bulk add and before dQ reads dS^T, where call 10 measured the two-way fence at
# 6-8 % of the time at D = 128. Two GPUs (nvidia-h200-x2), what times things alone on GPU 0.
#   GPU 0: ab.csv           the step against the last version (build/var_old) at N = 4096
#          peers_bars.csv   cuDNN and flash at the bar shapes
#          standard12.csv   step 12's rows of the standard sweep (the bar shapes among them)
#   GPU 1: check12.txt/.csv attn check --steps 12, the whole grid
#          sanitize.txt     memcheck, racecheck, synccheck of the backward on 8 shapes
#          runs.txt         attn run --backward on edge and long shapes
# Results land in OUT as they come (a cut call keeps what finished).
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
G0="env CUDA_VISIBLE_DEVICES=0 taskset -c 0-3"; G1="env CUDA_VISIBLE_DEVICES=1 taskset -c 4-31"
say start
gpu0() {
  for v in new old; do
    dir=build/steps; [ $v = old ] && dir=build/var_old
    ATTN_SWEEPS_FILE=$d/ablate.txt ATTN_STEPS_DIR=$dir $G0 build/attn bench --sweep ablate --steps 12 --out $o/ab_$v.csv 2>> $log
  done
  { cat $o/ab_new.csv; sed 1d $o/ab_old.csv | sed 's/12_backward_wgmma/12_two_way_fence/'; } > $o/ab.csv; rm -f $o/ab_new.csv $o/ab_old.csv
  say ab
  ATTN_SWEEPS_FILE=$d/bars.txt $G0 env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
  $G0 build/attn bench --sweep standard --steps 12 --out $o/standard12.csv 2>> $log; say standard
}
gpu1() {
  { echo "commit $sha"; $G1 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1 &
  mkdir -p $o/s; n=0
  for tool in racecheck memcheck synccheck; do
    for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,129,1,64 --causal" \
              "1,2,1,129,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal" "1,1,700,300,64"; do
      n=$((n+1))
      ( out=$($G1 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
        echo "step 12 $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt
        [ $rc != 0 ] && grep -E "Race reported|access at" <<<"$out" | head -6 >> $o/s/$(printf %02d $n).txt
        { echo "commit $sha"; cat $o/s/*.txt; } > $o/sanitize.txt ) &
    done
  done
  { echo "commit $sha"; for sh in "1,1,8192,8191,128" "1,2,4096,4096,64 --causal" "3,47,257,4099,128" "1,1,33700,2900,128 --causal" \
       "1,2,17,1000,64" "1,2,1000,17,128 --causal" "2,1,1,1,64" "1,1,1025,1000,128 --causal" "1,2,65,300,64 --causal"; do
     $G1 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | grep -E "^problem|^check"; done; } > $o/runs.txt 2>&1
  wait; rm -rf $o/s
  say check, sanitize, runs
}
gpu0 & gpu1; wait
say done
