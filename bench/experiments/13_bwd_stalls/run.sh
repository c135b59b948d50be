#!/usr/bin/env bash
# Where step 13's backward waits, by SASS line: after the 80-row tiles it takes 4-7 % more cycles
# than FlashAttention-4 for the same tensor work while issuing ~10 % fewer instructions
# (../13_br80/fin_run/ncu.txt against ../13_fa4_profile/), and Nsight Compute's largest stall
# at D = 128 is the L1TEX scoreboard, 3.4 of 11.0 cycles between a warp's instructions. bwd_main
# has no global or local loads, so those are mbarrier try-waits (SYNCS.PHASECHK): the producer's
# (which waits most of its life, harmlessly) or the consumers' (which would starve the tensor
# pipe). The warp samples per instruction say which.
# On the H200 (carry build/steps, build/attn, build/v15, .device-libs;
# LD_LIBRARY_PATH=$PWD/.device-libs; no FlashAttention-4 needed):
#   run.sh OUT   (~3 min) Nsight Compute's full set with source on bwd_main at
#                4,8,4096,4096,128 and 4,8,4096,4096,64, not causal (the second launch of each:
#                the first warms up): OUT/source_<D>.csv.gz (the SASS source page), details_<D>.txt,
#                and stalls_<D>.txt (../12_fwd_timeline/stalls.py: samples by stall reason, the
#                instructions that hold the most, with their neighbours)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}
mkdir -p "$o"
w=$(mktemp -d)
for d in 128 64; do
    timeout -k 5 200 ncu --clock-control none --set full --import-source yes -k regex:bwd_main \
        --launch-skip 1 -c 1 -o "$w/bwd$d" build/v15/ab --backward --rounds 1 --reps 1 \
        --shape 4,8,4096,4096,$d build/steps/13_backward_wgmma.so >"$o/ncu_$d.log" 2>&1
    echo "ncu D = $d rc $?"
    timeout 100 ncu -i "$w/bwd$d.ncu-rep" --page source --csv --print-source sass 2>>"$o/ncu_$d.log" |
        gzip >"$o/source_$d.csv.gz"
    timeout 100 ncu -i "$w/bwd$d.ncu-rep" --page details >"$o/details_$d.txt" 2>>"$o/ncu_$d.log"
    python3 bench/experiments/12_fwd_timeline/stalls.py "$o/source_$d.csv.gz" 30 >"$o/stalls_$d.txt" 2>&1
    head -14 "$o/stalls_$d.txt"
done
