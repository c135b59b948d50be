#!/usr/bin/env bash
# The final device call for step 08's sectioned causal order (one call, at most 8 files under $1):
#   verify.log       GPU tests (all steps), `attn check --step 08`, many-tile shapes against step 00,
#                    compute-sanitizer memcheck / racecheck / synccheck on step 08
#   check08.csv      the check's rows
#   standard.csv, peers_standard.csv, bench.log, meta.txt
#                    the standard sweep, every step, and SDPA's backends, in this one call
#   base_causal.csv  62ca8dd's step 08 (head-major causal order) on the causal rows of sched08's
#                    sweep, for the same-call comparison
# Usage (repo root, LD_LIBRARY_PATH set): ATTN_GIT_SHA=<sha> bench/results/h200/final-08/run.sh OUT
set -u
o=$1; t0=$SECONDS
log=$o/verify.log
{
echo "commit ${ATTN_GIT_SHA:-unknown}"
echo "== GPU tests at $((SECONDS-t0)) s"
build/tests/gpu 2>&1 | tail -4
echo "== attn check --step 08 at $((SECONDS-t0)) s"
build/attn check --step 08 --csv $o/check08.csv | tail -3
echo "== many-tile shapes against step 00 at $((SECONDS-t0)) s"
for s in "4,8,4096,4096,128 --causal" "3,50,1000,777,64 --causal" "2,5,8000,8100,128 --causal" \
         "1,7,16384,16000,128 --causal" "2,9,8191,8192,64 --causal" "1,3,33,4097,128 --causal" "4,8,4096,4096,64"; do
  echo "$s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
echo "== compute-sanitizer at $((SECONDS-t0)) s"
for tool in memcheck racecheck synccheck; do
  for s in "2,80,200,333,128 --causal" "1,200,129,127,64 --causal" "1,150,300,65,64" "1,30,700,1000,64"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
    grep -E "Error|Warning" <<<"$r" | head -4
  done
done
echo "== sweeps at $((SECONDS-t0)) s"
} > $log 2>&1
info=$(build/attn info)
{ echo "$info"; echo "git_sha=${ATTN_GIT_SHA:-unknown}"
  echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  echo "torch=$(python3 -c 'import torch; print(torch.__version__)')"; } > $o/meta.txt
{
echo "== build/attn bench --sweep standard"
build/attn bench --sweep standard --out $o/standard.csv
echo "== python3 bench/peer_sdpa.py --sweep standard"
python3 bench/peer_sdpa.py --sweep standard --out $o/peers_standard.csv
echo "== 62ca8dd's step 08, causal rows at $((SECONDS-t0)) s"
grep ' 1 fwd' bench/results/h200/sched08/sweep.txt > /tmp/causal_sweep.txt
ATTN_SWEEPS_FILE=/tmp/causal_sweep.txt ATTN_STEPS_DIR=build/var/base build/attn bench --sweep bars --steps 08 --out $o/base_causal.csv
} > $o/bench.log 2>&1
echo "== done at $((SECONDS-t0)) s" >> $log
tail -25 $log; ls $o
