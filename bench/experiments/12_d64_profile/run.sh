#!/usr/bin/env bash
# D = 64: step 12 as committed and FlashAttention-4 in Nsight Compute's warp samples by SASS
# line, at the two bar shapes behind in lockstep (4,8,16384,16384,64 and the same causal). Run
# whole at aa1fc89 (README), step 12 alone at f37aaf5 on an H100 (`solo`, solo_h100/). Then here:
#   python3 bench/experiments/12_fwd_timeline/by_opcode.py ncu_step12_n16384.csv.gz ncu_fa4_n16384.csv.gz
# Two calls back to back: FA4's wheels travel in two carries (candidates.sh's unpack_carry;
# .carry/b.txz from tools/pack.sh).
#   call 1, carry .carry build/fa4s1:  run.sh 1     (FA4's first part into /tmp/fa4)
#   call 2, carry .carry build/fa4s2:  run.sh 2 OUT (FA4 installed; profiles.tar: ncu_<kernel>_<shape>.csv.gz
#                                      and details_*.txt; fa4_dump.tar.xz: FA4's D = 64 cubins,
#                                      not for git; ncu.log; ~7 min); SHAPES="B,H,N,N,D:causal|-:name ..."
#                                      for other shapes, NODUMP=1 without the cubins
#   one call, no FA4 (carry .carry):   run.sh solo OUT (step 12 alone, ~2 min: its cycles against
#                                      details.txt's FlashAttention-4, same card and wheel)
set -u
cd "$(dirname "$0")/../../.." || exit 2
. bench/experiments/tools/candidates.sh
case ${1:-} in
1) unpack_carry; ls /tmp/fa4 ;;
2|solo)
    o=${2:?usage: run.sh 2 OUT}
    mkdir -p "$o" && o=$(cd "$o" && pwd)
    solo=0; [ "$1" = solo ] && solo=1
    unpack_carry
    [ $solo = 1 ] || { fa4_install "$o"; tail -n 1 "$o/fa4_install.txt"; }
    w=$(mktemp -d)
    N="ncu --clock-control none --set full --import-source yes"
    for sc in ${SHAPES:-"4,8,16384,16384,64:-:n16384" "4,8,16384,16384,64:causal:c16384"}; do
        sc=${sc//:/ }
        set -- $sc
        ab=$1; [ "$2" = causal ] && ab=$1,c
        [ $solo = 1 ] || timeout -k 5 120 $N --profile-from-start off -o $w/fa4_$3 \
            python3 bench/experiments/tools/ncu_peer.py fa4 fwd $1 $2 >>"$o/ncu.log" 2>&1
        timeout -k 5 100 $N -k regex:attention_fwd --launch-skip 1 -c 1 -o $w/step12_$3 build/v15/ab \
            --rounds 1 --reps 1 --shape $ab build/steps/12_three_warpgroups.so >>"$o/ncu.log" 2>&1
    done
    for r in $w/*.ncu-rep; do
        n=$(basename $r .ncu-rep)
        timeout 100 ncu -i $r --page source --csv --print-source sass 2>>"$o/ncu.log" | gzip >"$w/ncu_$n.csv.gz"
        timeout 60 ncu -i $r --page details >"$w/details_$n.txt" 2>>"$o/ncu.log"
    done
    (cd "$w" && tar -cf "$o/profiles.tar" ./*.csv.gz ./details_*.txt)
    # FlashAttention-4's D = 64 kernels as the CuTe DSL compiled them (../12_fa4_sass's way), to
    # read here with pip's cuobjdump beside step 12's SASS; not committed; NODUMP=1 skips it
    [ -n "${NODUMP:-}" ] || [ $solo = 1 ] && exit 0
    cat >/tmp/fa4_run.py <<'PY'
import sys, torch
from flash_attn.cute.interface import flash_attn_func
b, h, n, d, causal = (int(x) for x in sys.argv[1:6])
q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
flash_attn_func(q, k, v, causal=bool(causal))
torch.cuda.synchronize()
PY
    for c in 0 1; do
        mkdir -p /tmp/fa4dump/d64c$c
        CUTE_DSL_KEEP=ptx,cubin CUTE_DSL_DUMP_DIR=/tmp/fa4dump/d64c$c timeout 150 \
            python3 /tmp/fa4_run.py 4 8 16384 64 $c >>"$o/ncu.log" 2>&1
    done
    tar cJf "$o/fa4_dump.tar.xz" -C /tmp fa4dump
    ls -la "$o"
    ;;
*) sed -n 2,14p "$0"; exit 2 ;;
esac
