#!/usr/bin/env bash
# First device call of step 12 (the Hopper backward): is it right, and how fast, against step 06
# and SDPA's cuDNN and flash backwards at the eight bar shapes (bars.txt), in one run.
#   check12.txt/.csv   attn check --steps 12 (the whole grid, forward and backward)
#   run12.txt          attn run --backward at the D = 128 and 64 bar shapes (time, check vs 00)
#   sanitize12.txt     memcheck and racecheck of the backward on small edge shapes
#   bars.csv, peers_bars.csv   steps 06, 12 and SDPA's backwards at the bar shapes
# Usage (repo root): bench/experiments/12_backward/call1.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
say start
{ echo "commit $sha"; for sh in "4,8,4096,4096,128" "4,8,4096,4096,128 --causal" "4,8,4096,4096,64" "1,1,300,65,128 --causal"; do
    timeout 30 build/attn run --step 12 --backward --shape $sh; echo "[exit status $?]"; done; } > $o/run12.txt 2>&1
say run
{ echo "commit $sha"; for tool in memcheck racecheck; do for sh in "1,2,129,127,64 --causal" "1,1,65,300,128" "1,1,300,65,128 --causal"; do
    echo "== $tool $sh"; timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | tail -4; done; done; } > $o/sanitize12.txt 2>&1
say sanitize
export ATTN_SWEEPS_FILE=$d/bars.txt
build/attn bench --sweep bwdbars --steps 06,12 --out $o/bars.csv >> $log 2>&1
say bars
python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1
say peers
unset ATTN_SWEEPS_FILE
{ echo "commit $sha"; timeout 200 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1
say check
# the "red" variant (variants/make_red.py, built into build/var_red): dQ by red.global.add.v4.f32
if [ -d build/var_red ]; then
  { timeout 30 env ATTN_STEPS_DIR=build/var_red build/attn run --step 12 --backward --shape 4,8,4096,4096,128; } >> $o/run12.txt 2>&1
  ATTN_SWEEPS_FILE=$d/bars.txt ATTN_STEPS_DIR=build/var_red build/attn bench --sweep bwdbars --steps 12 --out $o/bars_red.csv >> $log 2>&1
  say red variant
fi
