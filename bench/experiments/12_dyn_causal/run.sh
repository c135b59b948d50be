#!/usr/bin/env bash
# 12_dyn_causal: step 12's causal forward on a persistent grid whose blocks take their work
# tiles from a counter (FlashAttention-3's dynamic scheduler), against one block per work tile
# (step 12 as committed). FlashAttention-4 runs the same grid, tile, registers and shared memory
# at D = 64, causal, N = 4096, yet takes 0.93x step 12's time (../12_fa4_fwd_profile): each of
# the 704 blocks pays its start (Q and K_0 in flight, S_0 alone) and its end (O out) with the SM's
# tensor cores idle, about one key tile of 17. A persistent block overlaps the next tile's loads
# with the current one's end; the counter keeps the heaviest-first order of the hardware's block
# dispatch. Predicted: +4-8 % at N = 2048-4096, ~1 % at 16384, both head dims.
# Builds (made on the CPU machine first, carried in build/var): base.so (step 12 at HEAD),
# dyn.so (the working tree: the slot ordered by the Q mbarrier), dyn_mb.so (the slot with an
# mbarrier of its own, in case racecheck does not follow the first).
#   run.sh OUT   (~7 min) build/v15/ab on eight causal shapes and two others; then, side by side,
#                the whole check grid of step 12 (forward), bench/sanitize.sh 12 (memcheck and
#                synccheck; racecheck), racecheck of dyn_mb on the scheduler's shapes, and
#                ../13_bwd_stalls/run.sh (Nsight Compute, step 13's backward)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
shapes=""
for d in 64 128; do
    for n in 2048 4096 8192 16384; do shapes="$shapes --shape 4,8,$n,$n,$d,c"; done
    shapes="$shapes --shape 4,8,4096,4096,$d"
done
# shellcheck disable=SC2086
timeout -k 5 150 build/v15/ab --rounds 3 --reps 20 $shapes build/var/base.so build/var/dyn.so \
    build/var/dyn_mb.so >"$o/ab.csv" 2>"$o/ab.log"
echo "ab rc $?"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
mb=$(steps_with 12_three_warpgroups=build/var/dyn_mb.so)
{ timeout -k 5 290 build/attn check --steps 12 --forward; echo "[exit status $?]"; } >"$o/check.txt" 2>&1 &
{ TOOLS="memcheck synccheck" timeout -k 5 290 bench/sanitize.sh 12; echo "[exit status $?]"; } \
    >"$o/sanitize_mem_sync.txt" 2>&1 &
{ TOOLS=racecheck timeout -k 5 290 bench/sanitize.sh 12; echo "[exit status $?]"; } >"$o/sanitize_race.txt" 2>&1 &
{ for sh in "1,140,260,65,64 --causal" "1,133,1,3000,128 --causal" "1,64,64,1400,128 --causal"; do
      # shellcheck disable=SC2086
      out=$(ATTN_STEPS_DIR=$mb timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool racecheck build/attn run --step 12 \
            --shape $sh --dtype bf16 --reps 1 2>&1)
      echo "dyn_mb racecheck $sh: $(grep -E 'RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E -- '-> (PASS|FAIL)' <<<"$out" | tail -1)"
  done; } >"$o/race_mb.txt" 2>&1 &
timeout -k 5 290 bash bench/experiments/13_bwd_stalls/run.sh "$o/stalls" >"$o/stalls.log" 2>&1 &
wait
tail -3 "$o/check.txt"
for f in "$o"/sanitize_*.txt; do
    echo "$(basename "$f"): $(grep -c 'rc 0;' "$f") clean of $(grep -c '^step ' "$f") runs"
    grep '^step ' "$f" | grep -v 'rc 0;'
done
cat "$o/race_mb.txt"
cat "$o/stalls.log"
