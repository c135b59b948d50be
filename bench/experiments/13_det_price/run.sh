#!/usr/bin/env bash
# Not yet run. The deterministic backward's price, measured side by side: step 13 as committed
# against itself with deterministic = 1 (ab's X.so:det), launch by launch, at the four D = 128 bar
# shapes and two at D = 64. Note 13 states 1.13-1.15x at D = 128, N = 16384 as the product of two
# runs (the deterministic kernel against the default before the writer, 1.11-1.12x, times the
# writer's gain in the default alone); the bar is 1.15x. ~1.5 min; needs nothing installed.
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
s=build/steps/13_backward_wgmma.so
mkdir -p build/var13 && cp $s build/var13/base.so && cp $s build/var13/det.so   # ab_ratios names by file
timeout -k 5 150 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
    --shape 4,8,16384,16384,128,c --shape 4,8,4096,4096,128 --shape 4,8,4096,4096,128,c \
    --shape 4,8,4096,4096,64 --shape 4,8,16384,16384,64 build/var13/base.so \
    build/var13/det.so:det >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
