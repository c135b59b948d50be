#!/usr/bin/env bash
# Not yet run. Causal, the forward's query tiles aligned to end at Nq instead of starting at 0
# (stepNN.patch: steps 12-14 carry the same forward), so the one tile that is not whole is the
# first, which sees one key tile, not the last, which sees them all. Key-tile trips at D = 64
# (192 x 128 tiles), counted: N = 2048 0.950x, 4096 0.945x, 8192 and 16384 0.985x; D = 128 and
# N a multiple of the tile: unchanged. Prediction: 3-5 % less time at D = 64 causal N = 2048-4096
# (the bar shape still behind FlashAttention-4 there: 0.96-0.97x), ~1 % at 8192-16384.
# Builds, here (make first; ../tools/candidates.sh's NV; build/var12 is git-ignored):
#   cp build/steps/12_three_warpgroups.so build/var12/base12.so
#   for n in 12 13 14: git apply stepNN.patch; make; cp the step's .so to build/var12/alNN.so;
#   git checkout steps/
# The last shape, not causal, is a control, and base's time there is the issue's 760 TFLOP/s bar
# measured as it asks, in short interleaved rounds (the bars sweep's median ran at 711).
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~6 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var12
d=$(steps_with 12_three_warpgroups=$v/al12.so 13_backward_wgmma=$v/al13.so 14_gqa=$v/al14.so)
# the tiles that now start below row 0: ragged causal shapes, Nq < Nk and Nq > Nk, both head
# dims (D = 128 stores O by TMA: a box part below 0), normal and far inputs, grouped in step 14
for st in 12 14; do
    quick_runs "$d" $st "--causal" 1,2,129,127,64 1,3,1000,1000,64 1,2,300,700,64 \
        1,2,700,300,64 2,8,4096,4096,64 1,2,1000,1000,128 1,2,200,1000,128 4,8,4000,4000,128
    quick_runs "$d" $st "--causal --inputs far" 1,3,1000,1000,64 1,2,700,300,128
done >"$o/checks.txt" 2>&1
quick_runs "$d" 14 "--causal" 2,8,1000,1000,64,2 2,8,777,1500,128,4 >>"$o/checks.txt" 2>&1
cp $v/base12.so $v/base.so
timeout -k 5 150 build/v15/ab --rounds 4 --reps 10 --shape 4,8,2048,2048,64,c \
    --shape 4,8,4096,4096,64,c --shape 4,8,8192,8192,64,c --shape 4,8,16384,16384,64,c \
    --shape 4,8,4096,4096,64 --shape 4,8,4096,4096,128,c --shape 4,8,4000,4000,128,c \
    --shape 4,8,16384,16384,128 \
    $v/base.so $v/al12.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
g=$(mktemp -d)   # the grids on step 00 (their reference) and the three patched steps alone
ln -s "$PWD/build/steps/00_materialized.so" "$g/"
for s in 12_three_warpgroups 13_backward_wgmma 14_gqa; do ln -s "$d/$s.so" "$g/"; done
{ ATTN_STEPS_DIR=$g timeout -k 5 250 build/tests/gpu --verbose --filter 'gpu/grid_*'
  echo "[exit status $?]"; } >"$o/grids.txt" 2>&1 &
{ ATTN_STEPS_DIR=$d TOOLS="memcheck racecheck" timeout -k 5 250 bench/sanitize.sh 12
  echo "[exit status $?]"; } >"$o/sanitize.txt" 2>&1 &
wait
grep -hE "Synthesis|FAIL|exit status" "$o/grids.txt" "$o/checks.txt" | head -20
echo "sanitize: $(grep -c 'rc 0;' "$o/sanitize.txt") clean of $(grep -c '^step ' "$o/sanitize.txt") runs"
