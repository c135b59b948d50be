#!/usr/bin/env bash
# Not yet run. Where FlashAttention-4's backward main kernel saves the 2.7-7.8 % of cycles it is
# ahead of step 13's at D = 128 (../13_dq_writer/ncu_run/summary.txt): Nsight Compute's full set
# with the SASS source page of both main kernels at 4,8,4096,4096,128 causal and
# 4,8,16384,16384,128 causal, then ../12_fwd_timeline/by_opcode.py per query tile (both kernels
# take 64 query rows a trip there). Two calls back to back: FlashAttention-4's wheels travel in
# two carries (../tools/candidates.sh's unpack_carry; .carry/b.txz as that file's packing says):
#   call 1, carry .carry build/fa4s1:  run.sh 1
#   call 2, carry .carry build/fa4s2:  run.sh 2 OUT   (~6 min; OUT/profiles.tar, by_opcode_*.txt)
set -u
cd "$(dirname "$0")/../../.." || exit 2
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
case ${1:-} in
1) unpack_carry; ls /tmp/fa4 ;;
2)
    o=${2:?usage: run.sh 2 OUT}
    mkdir -p "$o" && o=$(cd "$o" && pwd)
    unpack_carry
    fa4_install "$o"
    tail -n 1 "$o/fa4_install.txt"
    w=$(mktemp -d)
    N="ncu --clock-control none --set full --import-source yes"
    for sh in 4,8,4096,4096,128 4,8,16384,16384,128; do
        n=${sh//,/_}
        # shellcheck disable=SC2086
        timeout -k 5 150 $N --profile-from-start off -k regex:BackwardSm90 -o "$w/fa4_$n" \
            python3 bench/experiments/tools/ncu_peer.py fa4 bwd "$sh" causal >>"$o/ncu.log" 2>&1
        # shellcheck disable=SC2086
        timeout -k 5 150 $N -k regex:bwd_main --launch-skip 1 -c 1 -o "$w/step13_$n" build/v15/ab \
            --backward --rounds 1 --reps 1 --shape "$sh,c" build/steps/13_backward_wgmma.so \
            >>"$o/ncu.log" 2>&1
        for k in fa4 step13; do
            timeout 100 ncu -i "$w/${k}_$n.ncu-rep" --page source --csv --print-source sass \
                2>>"$o/ncu.log" | gzip >"$w/${k}_$n.csv.gz"
        done
        python3 bench/experiments/12_fwd_timeline/by_opcode.py "$w/step13_$n.csv.gz" \
            "$w/fa4_$n.csv.gz" step13 fa4 >"$o/by_opcode_$n.txt" 2>&1
    done
    (cd "$w" && tar -cf "$o/profiles.tar" ./*.csv.gz)
    head -n 30 "$o"/by_opcode_*.txt
    ;;
*) sed -n 2,9p "$0"; exit 2 ;;
esac
