#!/usr/bin/env bash
# Run once (README: answered). Why our steps time slower through the Python door than through attn bench while
# the peers do not (../../results/h200/interleaved.log against bars.log, the same lease: step 12's
# forward 1.005-1.12x attn bench's time, most at N = 16384, step 13's backward 1.00-1.05x; cuDNN
# and FlashAttention-4 within 2 % in both). The two differ in the data: attn bench (and ab)
# draw uniform inputs (common/tensor.c, inputs_make_fast), the peer script torch.randn, for the
# steps and the peers alike. A long kernel at the power limit runs at a clock its data sets, so:
#   call 1, carry .carry build/fa4s1: run.sh 1 OUT   steps 12 (forward) and 13 (backward) by ab at
#                                     the eight bar shapes, uniform then Gaussian inputs (~5 min)
#   call 2, carry .carry build/fa4s2: run.sh 2 OUT   FlashAttention-4 installed; the bars
#                                     interleaved through the Python door (steps, cuDNN, FA4),
#                                     randn then uniform inputs (bench/peer_sdpa.py --inputs),
#                                     forward and backward; the forward on randn with every call
#                                     eager (--eager: a launch, not a graph replay), and in
#                                     lockstep (--lockstep: launch by launch); then the six decode
#                                     bars interleaved, step 15 beside flash, cuDNN and FA4
#                                     (~8 min with the install)
# Both calls sample the SM clock, power and temperature (nvidia-smi, every 200 ms, smi.csv) and
# write the start of each phase (phases.txt); summary.py DIR1 DIR2 reads both calls' files here. Prediction: if the data sets the clock, Gaussian
# inputs slow the steps in ab by about the door's gap and uniform inputs speed every backend up
# in the door alike (ratios as with randn), and the ratio that compares like with like is the
# interleaved one; if only our steps move in the door, the door is the cause (its graph, its
# allocations), not the data.
# .carry/b.txz as ../tools/candidates.sh's unpack_carry reads it (build/v15/ab built with --normal,
# build/v15/fa4-install.sh in it).
set -u
cd "$(dirname "$0")/../../.." || exit 2
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
o=${2:?usage: run.sh 1|2 OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
phase() { echo "$(date +%T.%N) $*" >>"$o/phases.txt"; }
unpack_carry
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 200 \
    >"$o/smi.csv" 2>&1 &
smi=$!
case $1 in
1)
    # uniform then Gaussian, each pass; the forward's uniform once more at the end brackets drift
    for run in fwd:uniform:1 fwd:normal:1 bwd:uniform:1 bwd:normal:1 fwd:uniform:2; do
        IFS=: read -r pass inp rep <<<"$run"
        so=build/steps/12_three_warpgroups.so; flag=""
        [ "$pass" = bwd ] && so=build/steps/13_backward_wgmma.so && flag=--backward
        n=""; [ "$inp" = normal ] && n=--normal
        phase "ab $pass $inp $rep"
        # shellcheck disable=SC2086
        timeout -k 5 110 build/v15/ab $flag $n --rounds 3 --reps 20 $BAR_SHAPES "$so" \
            >"$o/ab_${pass}_${inp}_$rep.csv" 2>>"$o/ab.log"
        echo "ab $pass $inp $rep rc $?" >>"$o/ab.log"
    done
    ;;
2)
    fa4_install "$o"
    tail -n 1 "$o/fa4_install.txt"
    for pass in fwd bwd; do
        step=12; [ $pass = bwd ] && step=13
        sed "s/fwd,bwd/$pass/" bench/sweeps.txt >/tmp/sweeps_$pass
        for inp in randn uniform; do
            phase "door $pass $inp"
            ATTN_SWEEPS_FILE=/tmp/sweeps_$pass timeout -k 5 200 python3 bench/peer_sdpa.py --sweep bars \
                --backends cudnn,fa4 --steps $step --rounds 3 --inputs $inp \
                --out "$o/door_${pass}_$inp.csv" 2>>"$o/door.log"
            echo "door $pass $inp rc $?" >>"$o/door.log"
            { echo "== $pass $inp"; python3 bench/experiments/tools/interleaved.py "$o/door_${pass}_$inp.csv"; } \
                >>"$o/door_ratios.txt" 2>&1
        done
    done
    # the forward once more on randn inputs, two ways: every call eager behind the GPU spin (the
    # door's other difference from attn bench, a graph replay against a launch), and in lockstep
    # (a shape's three backends timed in turn launch by launch, ab.c's way: do the ratios tighten?)
    for how in eager lockstep; do
        phase "door fwd randn $how"
        ATTN_SWEEPS_FILE=/tmp/sweeps_fwd timeout -k 5 200 python3 bench/peer_sdpa.py --sweep bars \
            --backends cudnn,fa4 --steps 12 --rounds 3 "--$how" --out "$o/door_fwd_$how.csv" 2>>"$o/door.log"
        echo "door fwd $how rc $?" >>"$o/door.log"
        { echo "== fwd randn $how"; python3 bench/experiments/tools/interleaved.py "$o/door_fwd_$how.csv"; } \
            >>"$o/door_ratios.txt" 2>&1
    done
    # the six decode bars the same way (step 15 beside SDPA's flash and cuDNN and FA4; memory-bound,
    # so the data should not matter there): where the decode bars stand when timed interleaved
    phase "door decode"
    timeout -k 5 150 python3 bench/peer_sdpa.py --sweep decode --quick --backends flash,cudnn,fa4 \
        --steps 15 --rounds 3 --out "$o/door_decode.csv" 2>>"$o/door.log"
    echo "door decode rc $?" >>"$o/door.log"
    { echo "== decode randn"; python3 bench/experiments/tools/interleaved.py "$o/door_decode.csv"; } \
        >>"$o/door_ratios.txt" 2>&1
    cat "$o/door_ratios.txt"
    ;;
*) sed -n 2,22p "$0"; exit 2 ;;
esac
phase end
kill $smi 2>/dev/null
grep -h "rc" "$o"/*.log
