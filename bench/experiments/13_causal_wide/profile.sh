#!/usr/bin/env bash
# Run 2026-12-06 (README). Why 80-row query tiles took 2.3-2.9 % off the causal backward at D = 128,
# N = 16384, where the same tiles not causal took 7.2-7.8 % and 5-7 % was predicted (README):
# Nsight Compute on bwd_main of step 13 before (64-row causal tiles, build/var13l/b13.so: aa1fc89)
# and as committed (80 rows), at 4,8,16384,16384,128 causal, the SASS source page of each, then
# ../12_fwd_timeline/by_opcode.py on the two (a trip is a query tile: 64 rows against 80, so
# compare its samples a trip divided by the rows, and the kernels' cycles in details_*.txt).
# Builds, here (make first; ../tools/pack.sh builds build/var13l/b13.so).
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~2 min): profile.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: profile.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
w=$(mktemp -d)
mkdir -p "$w/r64" "$w/r80"
cp build/var13l/b13.so "$w/r64/base.so"
cp build/steps/13_backward_wgmma.so "$w/r80/base.so"
N="ncu --clock-control none --set full --import-source yes"
for t in r64 r80; do
    timeout -k 5 200 $N -k regex:bwd_main --launch-skip 1 -c 1 -o "$w/$t" build/v15/ab --backward \
        --rounds 1 --reps 1 --shape 4,8,16384,16384,128,c "$w/$t/base.so" >>"$o/ncu.log" 2>&1
    timeout 100 ncu -i "$w/$t.ncu-rep" --page source --csv --print-source sass 2>>"$o/ncu.log" |
        gzip >"$o/ncu_$t.csv.gz"
    timeout 60 ncu -i "$w/$t.ncu-rep" --page details >"$o/details_$t.txt" 2>>"$o/ncu.log"
done
python3 bench/experiments/12_fwd_timeline/by_opcode.py "$o/ncu_r64.csv.gz" "$o/ncu_r80.csv.gz" \
    rows64 rows80 | tee "$o/by_opcode.txt"
grep -E "^ +(Duration|SM Frequency|Elapsed Cycles|Issue Slots Busy|Registers Per Thread)" \
    "$o"/details_r64.txt "$o"/details_r80.txt | tee -a "$o/by_opcode.txt"
