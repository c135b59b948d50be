#!/usr/bin/env bash
# Thirteenth device call of step 12: the step with dK after dQ at D = 128 only (D = 64 as before:
# call 12 found it slower there), and make_call13.py's variants of it (head: causal blocks head by
# head; stm: dS^T by stmatrix; headstm: both). Two GPUs of one host:
#   GPU 0: bars.csv    the step, head, stm, headstm, the step again, at the bar shapes; then
#          peers_bars.csv  SDPA's cuDNN and flash backwards right after
#   GPU 1: check.txt, check_*.csv  attn check --steps 12 of stm and headstm, the whole grid
#          sanitize.txt  racecheck and synccheck of headstm on call 3's 8 shapes
# Usage (repo root): bench/experiments/12_backward/call13.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
dir() { case $1 in step*) echo build/steps;; *) echo build/var_$1;; esac; }
G0="env CUDA_VISIBLE_DEVICES=0 taskset -c 0-3"; G1="env CUDA_VISIBLE_DEVICES=1 taskset -c 4-31"
vs="step head stm headstm step2"
gpu0() {
  for v in $vs; do
    ATTN_SWEEPS_FILE=$d/bars.txt ATTN_STEPS_DIR=$(dir $v) $G0 build/attn bench --sweep bwdbars --steps 12 --out $w/$v.csv >> $log 2>&1
    say $v
  done
  { head -1 $w/step.csv; for v in $vs; do sed 1d $w/$v.csv | sed "s/12_backward_wgmma/12_$v/"; done; } > $o/bars.csv
  ATTN_SWEEPS_FILE=$d/bars.txt $G0 env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
}
gpu1() {
  for v in stm headstm; do
    { echo "variant $v"; ATTN_STEPS_DIR=$(dir $v) timeout 430 $G1 build/attn check --steps 12 --csv $o/check_$v.csv; echo "[exit status $?]"; } > $w/check_$v.txt 2>&1 &
  done
  mkdir -p $o/s; n=0
  for tool in racecheck synccheck; do
    for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,129,1,64 --causal" \
              "1,2,1,129,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal" "1,1,700,300,64"; do
      n=$((n+1))
      ( out=$(ATTN_STEPS_DIR=build/var_headstm timeout 300 $G1 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
        echo "headstm $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt
        [ $rc != 0 ] && grep -E "Race reported|access at|arrier" <<<"$out" | head -6 >> $o/s/$(printf %02d $n).txt ) &
    done
  done
  wait
  { echo "commit $(cat .git-sha) + working tree"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s
  cat $w/check_stm.txt $w/check_headstm.txt > $o/check.txt
  say check, sanitize
}
gpu0 & gpu1; wait
(cd $w && tar cf $o/extra.tar *.csv); rm -rf $w
say done
