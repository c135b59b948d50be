#!/usr/bin/env bash
# The causal alignment as landed in steps 12-14: run.sh's patches (stepNN.patch, q_shift a
# multiple of 16) plus one rule, only 192-row tiles shift (Br > Bc). At D = 128 (Br = Bc = 128)
# the shift saves no key tile and splits each diagonal over two, which run.sh measured as
# 0.6-1.2 % slower at (4, 8, 4000, 4000, 128) causal. The D = 64 kernels' SASS is the patch's, as
# measured. One call, ~5 min: the ragged causal checks of run.sh on the landed steps; launch by
# launch, the step as committed before (base.so), the patch (v2.so) and the landed step at the
# D = 128 shapes and one D = 64 shape; the GPU grids on steps 00 and 12-14; memcheck and racecheck
# on step 12.
# Builds, here: build/var12/base12.so (the step before), build/var12/al12.so (the patch), and
# build/steps as committed.
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs): land.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: land.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
d=$PWD/build/steps
for st in 12 14; do
    quick_runs "$d" $st "--causal" 1,2,129,127,64 1,3,1000,1000,64 1,2,300,700,64 \
        1,2,700,300,64 2,8,4096,4096,64 1,2,1000,1000,128 1,2,200,1000,128 4,8,4000,4000,128
    quick_runs "$d" $st "--causal --inputs far" 1,3,1000,1000,64 1,2,700,300,128
done >"$o/checks.txt" 2>&1
quick_runs "$d" 14 "--causal" 2,8,1000,1000,64,2 2,8,777,1500,128,4 >>"$o/checks.txt" 2>&1
v=build/var12
cp $v/base12.so $v/base.so && cp $v/al12.so $v/v2.so && cp $d/12_three_warpgroups.so $v/landed.so
timeout -k 5 120 build/v15/ab --rounds 3 --reps 10 --shape 4,8,4000,4000,128,c \
    --shape 4,8,4096,4096,128,c --shape 4,8,16384,16384,128,c --shape 4,8,4096,4096,128 \
    --shape 4,8,16384,16384,128 --shape 4,8,4096,4096,64,c \
    $v/base.so $v/v2.so $v/landed.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
g=$(mktemp -d)
for s in 00_materialized 12_three_warpgroups 13_backward_wgmma 14_gqa; do ln -s "$d/$s.so" "$g/"; done
{ ATTN_STEPS_DIR=$g timeout -k 5 250 build/tests/gpu --verbose --filter 'gpu/grid_*'
  echo "[exit status $?]"; } >"$o/grids.txt" 2>&1 &
{ TOOLS="memcheck racecheck" timeout -k 5 250 bench/sanitize.sh 12
  echo "[exit status $?]"; } >"$o/sanitize.txt" 2>&1 &
wait
grep -hE "Synthesis|FAIL|exit status" "$o/grids.txt" | head -8
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the fp64 reference, $(grep -c 'vs step 00' "$o/checks.txt") against step 00, $(grep -c 'rror' "$o/checks.txt") errors"
echo "sanitize: $(grep -c 'rc 0;' "$o/sanitize.txt") clean of $(grep -c '^step ' "$o/sanitize.txt") runs"
