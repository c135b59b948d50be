#!/usr/bin/env bash
# Step 12's forward (and 13's and 14's, the same code) with O written through shared memory and
# a TMA store, as FlashAttention-3 and -4 write it: tma12.patch, tma13.patch, tma14.patch (made by
# mk_tma.py from the steps at a1138e1; tests/pending_patches.sh keeps them applying).
# Why (profile_run/, epilogue.py): at 4,8,4096,4096,128 causal, step 12's warps spend 5.9 % of
# their samples on the epilogue's 4-byte global stores and on the instructions that wait for the
# store unit to read their registers (long_sb, drain); FlashAttention-4 spends 2.3 % at its exit,
# waiting for its TMA store. Not causal at N = 4096: 2.3 %; D = 64 causal: 2.2 %; N = 16384: 0.1 %.
# Prediction: 3-4 % less time at D = 128, N = 4096 causal (0.966x FA4 in bars.csv -> ~1.0x),
# ~1 % not causal, under 1 % at D = 64 and at N = 16384.
# Here (nvcc, no GPU):  run.sh build     (build/v12s/: base = step 12 as committed, tma12-14)
# On the H200 (carry build/steps, build/attn, build/tests, build/v12s, build/v15, .device-libs;
# LD_LIBRARY_PATH=$PWD/.device-libs):
#   run.sh run OUT    (~6 min) tma12 checked in step 12's place on ragged shapes (rows past Nq
#                     clipped by the tensor map, stream-K's cut tiles, one query), every input
#                     kind (checks.txt); launch by launch against the step at the eight bar
#                     shapes, 3 rounds of 10 (ab.csv, summary.txt); then the GPU suite and
#                     bench/sanitize.sh 12 14 with tma12-14 in place (candidates.sh's suite)
#   run.sh land OUT   (~6 min) the steps as committed with TMA_O at D = 128: attn run of step 12
#                     before (base.so) and after on the same seeds (same_bits.txt: the check lines
#                     must match digit for digit), the GPU suite and bench/sanitize.sh 12 14
#   run.sh bars OUT   (~6 min; the call right after `run` or `land`, FlashAttention-4's two parts carried
#                     in the two calls: build/fa4s1, then build/fa4s2) FA4 installed, then with
#                     the steps as committed the bars sweep beside SDPA cuDNN and FA4 (candidates.sh's
#                     bars_run) and the standard sweep's forward rows of steps 12 and 13 beside
#                     SDPA flash, cuDNN and FA4, as 12_fwd_timeline/land.sh part 2 runs them
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
B=build/v12s
X=bench/experiments/12_tma_store
case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B
    cp build/steps/12_three_warpgroups.so $B/base.so
    for s in 12_three_warpgroups:tma12 13_backward_wgmma:tma13 14_gqa:tma14; do
        patch -s -p1 -o $B/${s#*:}.cu steps/${s%%:*}/attention.cu $X/${s#*:}.patch
        # shellcheck disable=SC2086
        $NV -Xptxas -v -o $B/${s#*:}.so $B/${s#*:}.cu >$B/${s#*:}.ptxas 2>&1 &
    done
    wait
    for v in tma12 tma13 tma14; do echo "== $v"; ptxas_summary $B/$v.ptxas 'attention_fwd'; done
    sass_counts 'attention_fwdILi128ELi2ELi160ELb1' 18 $B/base.so $B/tma12.so
    ;;
run)
    o=${2:?usage: run.sh run OUT}
    mkdir -p "$o/logs"
    d=$(steps_with 12_three_warpgroups=$B/tma12.so 13_backward_wgmma=$B/tma13.so 14_gqa=$B/tma14.so)
    for inp in normal large far; do
        quick_runs "$d" 12 "--inputs $inp" 1,3,300,1000,128 "1,2,700,333,128 --causal" 2,4,65,777,64 \
            "1,2,1000,1000,64 --causal" 1,300,1,2100,64 1,40,1000,4000,128 "1,1,17,300,128 --causal"
    done >"$o/checks.txt" 2>&1
    quick_runs "$d" 14 "" 1,8,300,1000,128,2 "1,8,129,700,64,4 --causal" >>"$o/checks.txt" 2>&1
    echo "checks: $(grep -c PASS "$o/checks.txt") PASS, $(grep -c FAIL "$o/checks.txt") FAIL"
    # shellcheck disable=SC2086
    timeout -k 5 200 build/v15/ab --rounds 3 --reps 10 $BAR_SHAPES $B/base.so $B/tma12.so >"$o/ab.csv" 2>"$o/ab.log"
    echo "ab rc $?"
    ab_ratios "$o/ab.csv" | tee "$o/summary.txt"
    suite "$d" "$o/logs" 12 14
    suite_summary "$o/logs" | tee -a "$o/summary.txt"
    tar -C "$o" -czf "$o/logs.tar.gz" logs && rm -rf "$o/logs"
    ;;
land)
    o=${2:?usage: run.sh land OUT}
    tmp=$(mktemp -d)
    same_bits "$(steps_with 12_three_warpgroups=$B/base.so)" "$tmp/same_bits.txt"
    suite "$(steps_with)" "$tmp" 12 14
    suite_summary "$tmp" | tee "$o/summary.txt"
    tar -czf "$o/logs.tar.gz" -C "$tmp" .
    ;;
bars)
    o=${2:?usage: run.sh bars OUT}
    fa4_install "$o"
    tail -n 1 "$o/fa4_install.txt"
    d=build/steps
    bars_run "$o" "$d" "steps 12 and 13 as committed (TMA_O at D = 128)"
    standard_run "$o" fwd 12,13
    grep '^==\|rc ' "$o/bench.log" "$o/bars.log"
    (cd "$o" && tar -czf results.tar.gz ./*.csv ./*.log ./*.txt && ls -la)
    ;;
*) sed -n 2,25p "$0"; exit 2 ;;
esac
