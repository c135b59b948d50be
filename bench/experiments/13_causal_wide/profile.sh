#!/usr/bin/env bash
# Nsight Compute's full set and SASS source page on two backward main kernels at
# 4,8,16384,16384,128 causal, then ../12_fwd_timeline/by_opcode.py on the two (a trip is a query
# tile, so compare its samples a trip divided by the rows) and the kernels' cycles (details_*.txt).
#   profile.sh OUT        run 2026-12-06 (README): why 80-row query tiles took 2.3-2.9 % off the
#                         causal backward where 5-7 % was predicted: step 13 before (64-row causal
#                         tiles, build/var13l/b13.so from ../tools/pack.sh: aa1fc89) against as
#                         committed (80 rows), r64 and r80
#   profile.sh OUT fa4    run 2026-12-06 on an H100 (README): where the rest of the causal gap to
#                         FlashAttention-4 lies, step 13 as committed (r80) against
#                         FlashAttention-4's kernel (fa4, 64 rows a trip), on a machine where
#                         FlashAttention-4 is installed (after ../12_pin_partial/bars.sh OUT
#                         lockstep); `fa4 install` installs it first (its carry: build/fa4s2,
#                         after a call that unpacked build/fa4s1)
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~2 min): profile.sh OUT [fa4 [install]]
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: profile.sh OUT [fa4 [install]]}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
w=$(mktemp -d)
sh=4,8,16384,16384,128
N="ncu --clock-control none --set full --import-source yes"
step() {   # step NAME SO: profile bwd_main of the build SO as NAME
    # shellcheck disable=SC2086
    timeout -k 5 200 $N -k regex:bwd_main --launch-skip 1 -c 1 -o "$w/$1" build/v15/ab --backward \
        --rounds 1 --reps 1 --shape "$sh,c" "$2" >>"$o/ncu.log" 2>&1
}
if [ "${2:-}" = fa4 ]; then
    if [ "${3:-}" = install ]; then
        unpack_carry
        fa4_install "$o"
        tail -n 1 "$o/fa4_install.txt"
    fi
    a=r80 b=fa4
    step r80 build/steps/13_backward_wgmma.so
    # shellcheck disable=SC2086
    timeout -k 5 200 $N --profile-from-start off -k regex:BackwardSm90 -o "$w/fa4" \
        python3 bench/experiments/tools/ncu_peer.py fa4 bwd "$sh" causal >>"$o/ncu.log" 2>&1
else
    a=r64 b=r80
    step r64 build/var13l/b13.so
    step r80 build/steps/13_backward_wgmma.so
fi
for t in $a $b; do
    timeout 100 ncu -i "$w/$t.ncu-rep" --page source --csv --print-source sass 2>>"$o/ncu.log" |
        gzip >"$o/ncu_$t.csv.gz"
    timeout 60 ncu -i "$w/$t.ncu-rep" --page details >"$o/details_$t.txt" 2>>"$o/ncu.log"
done
python3 bench/experiments/12_fwd_timeline/by_opcode.py "$o/ncu_$a.csv.gz" "$o/ncu_$b.csv.gz" \
    rows${a#r} ${b/r80/rows80} | tee "$o/by_opcode.txt"
grep -E "^ +(Duration|SM Frequency|Elapsed Cycles|Issue Slots Busy|Registers Per Thread)" \
    "$o/details_$a.txt" "$o/details_$b.txt" | tee -a "$o/by_opcode.txt"
