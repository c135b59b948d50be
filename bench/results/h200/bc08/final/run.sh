#!/usr/bin/env bash
# The final call for the shipped step 08 (the key tile per problem at D = 128; at most 8 files):
#   (N = 1,133,1,3000 at D = 128 runs Bc = 160 with stream-K; 1,133,1,2900 Bc = 176 with stream-K)
#   verify.log   GPU tests (every step), attn check --step 08, shapes that cut tiles against step 00
#                or the CPU, compute-sanitizer memcheck / racecheck / synccheck, Python tests,
#                the training demo
#   check08.csv  the check's rows
#   standard.csv, peers_standard.csv, bench.log, meta.txt: the standard sweep, every step, and
#                SDPA's backends, in this one call
# Usage (repo root, LD_LIBRARY_PATH set): ATTN_GIT_SHA=<sha> bench/results/h200/bc08/final/run.sh OUT
set -u
o=$1; t0=$SECONDS; log=$o/verify.log
{
echo "commit ${ATTN_GIT_SHA:-unknown}"
echo "== GPU tests at $((SECONDS-t0)) s"
build/tests/gpu --verbose 2>&1 | grep -E "FAIL|PASS\]|Synthesis|seed"
echo "== attn check --step 08 at $((SECONDS-t0)) s"
build/attn check --step 08 --csv $o/check08.csv | tail -3
echo "== shapes that cut work tiles at $((SECONDS-t0)) s"
for s in "4,8,4096,4096,128" "1,7,16384,16000,128" "1,135,65,4000,128" "2,70,300,2900,128" \
         "1,133,1,3000,128" "1,133,1,2900,128" "4,8,2048,2048,128" "4,8,4096,4096,64"; do
  echo "$s: $(build/attn run --step 08 --dtype bf16 --shape $s 2>&1 | grep -E 'check|rate' | tr '\n' ' ')"
done
echo "== compute-sanitizer at $((SECONDS-t0)) s"
for tool in memcheck racecheck synccheck; do
  for s in "1,133,1,3000,128" "1,133,1,2900,128" "1,60,300,333,128" "1,150,300,65,64" "2,40,200,333,128 --causal"; do
    r=$(compute-sanitizer --tool $tool build/attn run --step 08 --dtype bf16 --reps 1 --shape $s 2>&1)
    echo "$tool $s: rc $?; $(grep -E 'SUMMARY' <<<"$r" | head -1); $(grep -E '^check' <<<"$r" | head -1)"
    grep -E "Error|Warning|access" <<<"$r" | head -6
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
} > $o/bench.log 2>&1
{
echo "== Python tests at $((SECONDS-t0)) s"
timeout 40 python3 -m pytest -q tests/test_torch.py 2>&1 | tail -4
echo "== training demo at $((SECONDS-t0)) s"
timeout 15 python3 python/train_demo.py 2>&1 | tail -3
echo "== done at $((SECONDS-t0)) s"
} >> $log 2>&1
tail -8 $log; ls $o
