#!/usr/bin/env bash
# Not yet run. The forward kernel of steps 11-14 is one function of 270-348 lines, against the
# style's "a device function per stage, none above about 80 lines". stages_NN.patch moves two
# stages out of it, the code unchanged: stream-K's merge (step 11 on: sk_partial, sk_count_in,
# sk_merge) and the epilogue's stores (step 12 on, where the TMA store of O makes them 50 lines:
# store_o); 270 -> 223 lines in step 11, 348 -> 252 in steps 12-14. In the SASS (here): every
# kernel without stream-K is byte for byte the same; in the two with it (D = 64 and 128, not
# causal), everything before the last wgmma wait is the same instructions, only the 33 or 65
# IMAD.MOVs that zero O at a work tile's start name other registers (as between step 12 and the
# measured pin4 build, which timed alike), and the merge after the loop changed 12-27 lines.
# Prediction: no change of time beyond noise (0.997-1.003x), every check as before.
# Builds, here (make first; ../tools/candidates.sh's NV; build/var11s is git-ignored):
#   for s in 11 12 13 14; do f=$(ls -d steps/${s}_*); git apply bench/experiments/11_fwd_stages/stages_$s.patch
#       $NV $f/attention.cu -o build/var11s/$s.so; git checkout $f; done
#   for s in 11 12; do mkdir -p build/var11s/a$s; cp build/steps/${s}_*.so build/var11s/a$s/base.so
#       cp build/var11s/$s.so build/var11s/a$s/new.so; done
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~7 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var11s
d=$(steps_with 11_persistent=$v/11.so 12_three_warpgroups=$v/12.so 13_backward_wgmma=$v/13.so 14_gqa=$v/14.so)
# the whole GPU suite (its grids reach stream-K's cut tiles at both head dims) beside the
# sanitizers on the four steps (stream-K's shapes among bench/sanitize.sh's)
suite "$d" "$o" 11 12 13 14
suite_summary "$o"
# launch by launch: steps 11 and 12 against themselves before the patch (aNN/base.so, aNN/new.so),
# where stream-K cuts tiles (not causal) and where it does not (causal)
timeout -k 5 200 build/v15/ab --rounds 3 --reps 20 --shape 4,8,4096,4096,64 --shape 4,8,8192,8192,64 \
    --shape 4,8,4096,4096,128 --shape 4,8,16384,16384,128 --shape 4,8,4096,4096,128,c \
    $v/a12/base.so $v/a12/new.so >"$o/ab_12.csv" 2>"$o/ab.log"
timeout -k 5 120 build/v15/ab --rounds 3 --reps 20 --shape 4,8,4096,4096,128 --shape 4,8,16384,16384,128 \
    $v/a11/base.so $v/a11/new.so >"$o/ab_11.csv" 2>>"$o/ab.log"
for s in 11 12; do echo "step $s"; ab_ratios "$o/ab_$s.csv"; done | tee "$o/ab_ratios.txt"
