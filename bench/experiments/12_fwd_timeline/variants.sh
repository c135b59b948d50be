#!/usr/bin/env bash
# Two cuts to the path from one warpgroup's softmax to its next turn, which the profile
# (run.sh's ncu, stalls by SASS line) shows is what sets the loop's period at D = 128:
#   resc   O rescaled by the last tile's alpha right after S_j is issued (S_j on the tensor
#          cores meanwhile), not after the wait for P V: 64 FMUL (D = 128) off that path
#   pin0   pin_softmax holds only row 0's exponentials before the wait for P V (ptxas then runs
#          the rest after it, beside the rescale of O and the packing of P, as FA4's SASS does)
#   pinmax pin_softmax holds only the maxima before that wait
#   fa4sched  FlashAttention-4's schedule written out: the softmax split in a head (mask, maxima,
#          alpha, the first 2 column groups' exponentials, pinned before the wait for P V) and a
#          tail after it, each column group's exponentials followed by its share of O's rescale
#   emuN   every N-th column group's exponentials (2 of every 8N scores a thread holds) by a
#          degree-3 polynomial on the FMA pipe (ex2_poly), the rest by MUFU.EX2, whose 16 a clock
#          per SM bound the softmax: emu4 moves a quarter of them, emu8 an eighth
# All from vx.patch (-DV_RESC, -DV_EMU; both 0: step 12's PTX).
# Here (nvcc, no GPU):  variants.sh build     (build/v12r/: base = step 12, resc, emu4, emu8,
#                                              resc_emu4, resc_emu6; .carry/b.txz)
# On the H200 (carry .carry [build/fa4s1 or build/fa4s2]; LD_LIBRARY_PATH=$PWD/.device-libs):
#   variants.sh ab OUT      each build checked in step 12's place (attn run, normal, large and far
#                           inputs, six ragged shapes: checks.txt), then launch by launch at the
#                           eight bar shapes, 3 rounds of 10 (ab.csv)
#   variants.sh fa4 OUT V.. FlashAttention-4 installed (both carries' parts in /tmp/fa4), then
#                           attn bench --sweep bars (forward) of step 12 and of each build V in
#                           its place, SDPA cuDNN and FA4 beside them (bars_V.csv, peers_bars.csv),
#                           and Nsight Compute (full set, SASS source page) of FA4 and each V at
#                           4,8,4096,4096,128 (ncu_*.csv.gz)
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
B=build/v12r
X=bench/experiments/12_fwd_timeline
VARS=${VARS:-"resc emu4 emu8 resc_emu4 resc_emu6"}
case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B .carry
    cp build/steps/12_three_warpgroups.so $B/base.so
    patch -s -p1 -o $B/vx.cu steps/12_three_warpgroups/attention.cu $X/vx.patch
    for v in "resc:-DV_RESC=1" "emu4:-DV_EMU=4" "emu8:-DV_EMU=8" "resc_emu4:-DV_RESC=1 -DV_EMU=4" \
             "resc_emu6:-DV_RESC=1 -DV_EMU=6" "pin0:-DV_PIN=1" "pinmax:-DV_PIN=2" "pin0_resc:-DV_PIN=1 -DV_RESC=1" "fa4sched:-DV_PIN=3"; do
        # shellcheck disable=SC2086
        $NV ${v#*:} -Xptxas -v -o $B/${v%%:*}.so $B/vx.cu >$B/${v%%:*}.ptxas 2>&1 &
    done
    wait
    for v in $VARS pin0 pinmax pin0_resc fa4sched; do echo "== $v"; ptxas_summary $B/$v.ptxas attention_fwd; done
    sass_counts 'attention_fwdILi128ELi2ELi160ELb1' 18 $B/base.so $B/*.so
    git rev-parse --short HEAD >.git-sha
    tar cf - build/steps build/attn $B/*.so build/v15/ab build/v15/fa4-install.sh build/tests/gpu \
        .device-libs .git-sha | xz -T8 -6 >.carry/b.txz
    du -sh .carry/b.txz
    ;;
ab)
    o=${2:?usage: variants.sh ab OUT}
    mkdir -p "$o"
    unpack_carry
    for v in $VARS; do
        {
            d=$(steps_with 12_three_warpgroups=$B/$v.so)
            for inp in normal large far; do
                quick_runs "$d" 12 "--inputs $inp" 1,3,300,1000,128 "1,2,700,333,128 --causal" \
                    2,4,1000,777,64 "1,2,1000,1000,64 --causal" 1,300,1,2100,64 1,40,1000,4000,128
            done >"$o/checks_$v.txt" 2>&1
        } &
    done
    wait
    for v in $VARS; do echo "== $v: $(grep -c PASS "$o/checks_$v.txt") PASS, $(grep -c FAIL "$o/checks_$v.txt") FAIL"; done |
        tee "$o/checks.txt"
    for v in $VARS; do cat "$o/checks_$v.txt"; done >>"$o/checks.txt"; rm -f "$o"/checks_*.txt
    # shellcheck disable=SC2086
    timeout -k 5 300 build/v15/ab --rounds 3 --reps 10 $BAR_SHAPES $B/base.so $(for v in $VARS; do echo $B/$v.so; done) \
        >"$o/ab.csv" 2>"$o/ab.log"
    echo "ab rc $?"
    ab_ratios "$o/ab.csv" | tee "$o/summary.txt"
    ;;
fa4)
    o=${2:?usage: variants.sh fa4 OUT V...}
    shift 2
    mkdir -p "$o"
    unpack_carry
    { mkdir -p /tmp/fa4a && cat /tmp/fa4/aa.aa /tmp/fa4/aa.ab >/tmp/fa4a/cu13.part.aa &&
          bash build/v15/fa4-install.sh /tmp/fa4/b /tmp/fa4a; } >"$o/fa4_install.txt" 2>&1
    tail -1 "$o/fa4_install.txt"
    sed 's/fwd,bwd/fwd/' bench/sweeps.txt >/tmp/sweeps_fwd
    for v in base "$@"; do
        d=$(steps_with 12_three_warpgroups=$B/$v.so)
        ATTN_STEPS_DIR=$d ATTN_SWEEPS_FILE=/tmp/sweeps_fwd ATTN_GIT_SHA="$(cat .git-sha) $v" timeout -k 5 150 \
            build/attn bench --sweep bars --steps 12 --out "$o/bars_$v.csv" >"$o/bars_$v.log" 2>&1
        echo "bars $v rc $?"
    done
    ATTN_SWEEPS_FILE=/tmp/sweeps_fwd timeout -k 5 200 python3 bench/peer_sdpa.py --sweep bars \
        --backends cudnn,fa4 --out "$o/peers_bars.csv" 2>"$o/peers.log"
    echo "peers rc $?"
    w=$(mktemp -d)
    N="ncu --clock-control none --set full --import-source yes"
    timeout -k 5 150 $N --profile-from-start off -o $w/fa4 \
        python3 bench/experiments/tools/ncu_peer.py fa4 fwd 4,8,4096,4096,128 >"$o/ncu.log" 2>&1
    for v in base "$@"; do
        timeout -k 5 100 $N -k regex:attention_fwd --launch-skip 1 -c 1 -o $w/$v build/v15/ab --rounds 1 \
            --reps 1 --shape 4,8,4096,4096,128 $B/$v.so >>"$o/ncu.log" 2>&1
    done
    for r in $w/*.ncu-rep; do
        n=$(basename $r .ncu-rep)
        timeout 100 ncu -i $r --page source --csv --print-source sass 2>>"$o/ncu.log" | gzip >"$o/ncu_$n.csv.gz"
        timeout 60 ncu -i $r --page details >"$o/details_$n.txt" 2>>"$o/ncu.log"
    done
    tar -C "$o" -cf "$o/details.tar" $(cd "$o" && ls details_*.txt) && rm -f "$o"/details_*.txt
    ls -la "$o"
    ;;
*) echo "usage: variants.sh build | ab OUT | fa4 OUT V..." >&2; exit 2 ;;
esac
