#!/usr/bin/env bash
# Twelfth device call of step 12: dK issued after dQ, so that dQ's staging runs while the tensor
# cores do dK (ord, variants/order.patch), and on top of it a dQ writer warp in the producer
# warpgroup that issues the bulk adds (ordw, the step as built). Two GPUs of one host:
#   GPU 0: bars.csv    base (the committed step), ord, ordw, base again at the bar shapes, then
#          peers_bars.csv  SDPA's cuDNN and flash backwards right after
#   GPU 1: check_ord*, check_ordw*  attn check --steps 12 of both, the whole grid
#          sanitize.txt  memcheck, racecheck, synccheck of ordw on call 3's 8 shapes
#          sass.txt      spill stores and loads per kernel, and where they sit in bwd_main
# Usage (repo root): bench/experiments/12_backward/call12.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
dir() { case $1 in ordw*) echo build/steps;; base*) echo build/var_base;; *) echo build/var_$1;; esac; }
G0="env CUDA_VISIBLE_DEVICES=0 taskset -c 0-3"; G1="env CUDA_VISIBLE_DEVICES=1 taskset -c 4-31"
gpu0() {
  for v in base ord ordw base2; do
    ATTN_SWEEPS_FILE=$d/bars.txt ATTN_STEPS_DIR=$(dir $v) $G0 build/attn bench --sweep bwdbars --steps 12 --out $w/$v.csv >> $log 2>&1
    say $v
  done
  { head -1 $w/base.csv; for v in base ord ordw base2; do sed 1d $w/$v.csv | sed "s/12_backward_wgmma/12_$v/"; done; } > $o/bars.csv
  ATTN_SWEEPS_FILE=$d/bars.txt $G0 env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
}
gpu1() {
  for v in ord ordw; do
    { echo "variant $v"; ATTN_STEPS_DIR=$(dir $v) timeout 430 $G1 build/attn check --steps 12 --csv $o/check_$v.csv; echo "[exit status $?]"; } > $w/check_$v.txt 2>&1 &
  done
  mkdir -p $o/s; n=0
  for tool in racecheck memcheck synccheck; do
    for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,129,1,64 --causal" \
              "1,2,1,129,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal" "1,1,700,300,64"; do
      n=$((n+1))
      ( out=$(timeout 300 $G1 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
        echo "step 12 $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt
        [ $rc != 0 ] && grep -E "Race reported|access at|Barrier|barrier" <<<"$out" | head -6 >> $o/s/$(printf %02d $n).txt ) &
    done
  done
  for v in base ord ordw; do
    cuobjdump -sass $(dir $v)/12_backward_wgmma.so > $w/$v.sass 2>/dev/null
    awk -v v=$v '/Function :/ {f=$3} /STL|LDL/ {n[f]++} END {for (k in n) if (k ~ /bwd_main/) print v, k, n[k], "STL/LDL"}' $w/$v.sass
    awk '/Function :/ {f=$3} f ~ /bwd_mainILi128/ && /STL|LDL|HGMMA.*gsb0 ;|BAR|SYNCS|UBLKRED|BRA|WARPGROUP/' $w/$v.sass | sed 's/ *\/\* 0x[0-9a-f]* \*\/ *$//' | head -400 > $w/$v.128.txt
  done > $o/sass.txt 2>&1
  wait
  { echo "commit $(cat .git-sha) + working tree"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s
  cat $w/check_ord.txt $w/check_ordw.txt > $o/check.txt
  say check, sanitize
}
gpu0 & gpu1; wait
(cd $w && tar cf $o/extra.tar *.128.txt *.csv) ; rm -rf $w
say done
