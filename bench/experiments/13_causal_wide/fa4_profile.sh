#!/usr/bin/env bash
# Not yet run. Where the rest of the causal D = 128 gap to FlashAttention-4 lies at N = 16384 (the
# 80-row tiles left it at about 0.96x, README): Nsight Compute's full set with the SASS source
# page of step 13's bwd_main as committed (80 query rows a trip) and FlashAttention-4's backward
# main kernel (64 a trip) in one call, at 4,8,16384,16384,128 causal, then
# ../12_fwd_timeline/by_opcode.py on the two (compare samples a trip divided by the rows) and the
# kernels' elapsed cycles. Run it after ../12_pin_partial/bars.sh OUT lockstep on the same warm
# machine (FlashAttention-4 installed there), or with `install` after its unpack call.
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~2 min): fa4_profile.sh OUT [install]
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: fa4_profile.sh OUT [install]}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
if [ "${2:-}" = install ]; then
    unpack_carry
    fa4_install "$o"
    tail -n 1 "$o/fa4_install.txt"
fi
w=$(mktemp -d)
sh=4,8,16384,16384,128
N="ncu --clock-control none --set full --import-source yes"
# shellcheck disable=SC2086
timeout -k 5 150 $N --profile-from-start off -k regex:BackwardSm90 -o "$w/fa4" \
    python3 bench/experiments/tools/ncu_peer.py fa4 bwd "$sh" causal >>"$o/ncu.log" 2>&1
# shellcheck disable=SC2086
timeout -k 5 150 $N -k regex:bwd_main --launch-skip 1 -c 1 -o "$w/step13" build/v15/ab --backward \
    --rounds 1 --reps 1 --shape "$sh,c" build/steps/13_backward_wgmma.so >>"$o/ncu.log" 2>&1
for k in fa4 step13; do
    timeout 100 ncu -i "$w/$k.ncu-rep" --page source --csv --print-source sass 2>>"$o/ncu.log" |
        gzip >"$o/ncu_$k.csv.gz"
    timeout 60 ncu -i "$w/$k.ncu-rep" --page details >"$o/details_$k.txt" 2>>"$o/ncu.log"
done
python3 bench/experiments/12_fwd_timeline/by_opcode.py "$o/ncu_step13.csv.gz" "$o/ncu_fa4.csv.gz" \
    step13 fa4 | tee "$o/by_opcode.txt"
grep -E "^ +(Duration|SM Frequency|Elapsed Cycles|Issue Slots Busy|Registers Per Thread)" \
    "$o"/details_step13.txt "$o"/details_fa4.txt | tee -a "$o/by_opcode.txt"
