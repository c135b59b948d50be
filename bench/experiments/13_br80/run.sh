#!/usr/bin/env bash
# Step 13's backward at D = 128, not causal (and not deterministic), with 80-row query tiles
# instead of 64: FlashAttention-3's sm90 choice there (80 x 128 tiles, two MMA warpgroups, dQ
# computed transposed, "dQ_swapAB"). br80.patch, against steps/13_backward_wgmma/attention.cu at
# 9d88f3a: BwdTiles<128, true> (Br = 80, DQ_T), used by bwd_wide() problems only; causal, the
# deterministic backward and D = 64 keep their kernels (their SASS is unchanged, byte for byte).
# br80_14.patch: the same change in steps/14_gqa/attention.cu (its blocks walk a K/V group's query
# heads), the same code wherever steps 13 and 14 are the same (make diff A=13 B=14 stays GQA).
# Here (nvcc, no GPU):  run.sh build     (build/v13b/: base.so = step 13 as committed, br80.so,
#                                         base14.so = step 14 as committed, br80_14.so; ptxas
#                                         registers/spills of all four, the SASS loop lengths;
#                                         build/v15/ab if missing)
# On the H200 (carry build/steps, build/attn, build/v13b, build/v15, build/tests, .device-libs;
# LD_LIBRARY_PATH=$PWD/.device-libs):
#   run.sh run OUT    (~4 min) br80 checked in step 13's place: ragged not-causal D = 128
#                     backward shapes (Nq not a multiple of 80, one partial tile, Nk past a key
#                     tile, Nk a multiple of 128 = the unmasked kernel, Nq = 1) for the inputs
#                     normal, large and far, and the paths that keep Br = 64 (causal,
#                     deterministic, D = 64) once; br80_14 in step 14's place: groups of 4, 2, 1
#                     and multi-query at D = 128 not causal, inputs normal and far, and causal,
#                     deterministic and D = 64 once (checks.txt); then br80 launch by launch
#                     against step 13 at 4,8,4096,4096,128 and 4,8,16384,16384,128, 3 rounds of
#                     10 (ab.csv, summary.txt)
#   run.sh suite OUT  (~6 min, a second call) with br80 in step 13's place and br80_14 in step
#                     14's: the GPU suite and bench/sanitize.sh 13 14 (memcheck + synccheck,
#                     racecheck; its D = 128 not-causal shapes, 1,1,65,300,128 and
#                     1,2,1,129,128 among them, take the 80-row kernel): OUT/summary.txt,
#                     OUT/logs.tar.gz
#   run.sh land OUT   (~8 min) the steps as committed with br80 landed: run's checks on build/steps
#                     (checks.txt), step 14 launch by launch against base14.so at the two shapes
#                     (ab14.csv; ab_ratios names it br80_14), then the GPU suite and
#                     bench/sanitize.sh 13 14 (summary.txt, logs.tar.gz)
#   run.sh bars OUT   (~7 min; the call right after `land`, FlashAttention-4's two parts carried in
#                     the two calls: build/fa4s1, then build/fa4s2) FA4 installed, then the bars
#                     sweep beside SDPA cuDNN and FA4 (candidates.sh's bars_run) and the standard
#                     sweep's backward rows of step 13 beside SDPA flash, cuDNN and FA4
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
B=build/v13b
X=bench/experiments/13_br80
case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B
    cp build/steps/13_backward_wgmma.so $B/base.so
    [ -x build/v15/ab ] || build_ab
    patch -s -p1 -o $B/br80.cu steps/13_backward_wgmma/attention.cu $X/br80.patch
    patch -s -p1 -o $B/br80_14.cu steps/14_gqa/attention.cu $X/br80_14.patch
    # shellcheck disable=SC2086
    $NV -Xptxas -v -o $B/br80.so $B/br80.cu >$B/br80.ptxas 2>&1 &
    # the step as committed once more, for its ptxas lines only
    # shellcheck disable=SC2086
    $NV -Xptxas -v -o $B/base_v.so steps/13_backward_wgmma/attention.cu >$B/base.ptxas 2>&1 &
    # step 14: as committed (base14.so, as the Makefile builds it) and patched
    # shellcheck disable=SC2086
    $NV -Xptxas -v -o $B/br80_14.so $B/br80_14.cu >$B/br80_14.ptxas 2>&1 &
    # shellcheck disable=SC2086
    $NV -Xptxas -v -o $B/base14.so steps/14_gqa/attention.cu >$B/base14.ptxas 2>&1 &
    wait
    for v in base br80 base14 br80_14; do
        echo "== $v (bwd_main<D, MASKED, DET, KEYS[, WIDE]>)"
        ptxas_summary $B/$v.ptxas 'bwd_main|bwd_convert'
        echo "  wgmma serialized (C7512): $(grep -c C7512 $B/$v.ptxas) kernels"
    done
    # a query tile's wgmmas: 64 rows 8 + 8 + 4 + 8 + 4 = 32; 80 rows 8 + 8 + 5 + 8 + 5 = 34
    sass_counts 'bwd_mainILi128ELb0ELb0ELb0E' 32 $B/base.so
    sass_counts 'bwd_mainILi128ELb0ELb0ELb0ELb1E' 34 $B/br80.so
    sass_counts 'bwd_mainILi128ELb1ELb0ELb0E' 32 $B/base.so
    sass_counts 'bwd_mainILi128ELb1ELb0ELb0ELb1E' 34 $B/br80.so
    echo "== step 14"
    sass_counts 'bwd_mainILi128ELb0ELb0ELb0E' 32 $B/base14.so
    sass_counts 'bwd_mainILi128ELb0ELb0ELb0ELb1E' 34 $B/br80_14.so
    sass_counts 'bwd_mainILi128ELb1ELb0ELb0E' 32 $B/base14.so
    sass_counts 'bwd_mainILi128ELb1ELb0ELb0ELb1E' 34 $B/br80_14.so
    ;;
run | land)
    o=${2:?usage: run.sh run|land OUT}
    mkdir -p "$o"
    if [ "$1" = land ]; then d=build/steps; else d=$(steps_with 13_backward_wgmma=$B/br80.so 14_gqa=$B/br80_14.so); fi
    {
        for inp in normal large far; do
            quick_runs "$d" 13 "--backward --inputs $inp" 1,3,300,1000,128 2,4,65,777,128 \
                1,2,1000,1000,128 1,40,1000,4000,128 1,2,1000,1024,128 2,2,4000,2048,128 \
                1,300,1,2100,128
        done
        quick_runs "$d" 13 "--backward" "1,2,700,333,128 --causal" "1,3,300,1000,128 --deterministic" \
            2,4,65,777,64 "1,2,1000,1000,64 --causal"
        # step 14 (B,H,Nq,Nk,D,H_kv): groups of 4, 2, 1 (= step 13) and multi-query (8)
        for inp in normal far; do
            quick_runs "$d" 14 "--backward --inputs $inp" 1,8,300,1000,128,2 2,8,65,777,128,4 \
                1,8,1000,1024,128,8 1,8,1,2100,128,1
        done
        quick_runs "$d" 14 "--backward" "1,8,300,1000,128,2 --causal" \
            "1,8,300,1000,128,2 --deterministic" 2,8,65,777,64,4
    } >"$o/checks.txt" 2>&1
    echo "checks: $(grep -c PASS "$o/checks.txt") PASS, $(grep -c FAIL "$o/checks.txt") FAIL"
    if [ "$1" = run ]; then
        timeout -k 5 200 build/v15/ab --backward --rounds 3 --reps 10 --shape 4,8,4096,4096,128 \
            --shape 4,8,16384,16384,128 $B/base.so $B/br80.so >"$o/ab.csv" 2>"$o/ab.log"
        echo "ab rc $?"
        ab_ratios "$o/ab.csv" | tee "$o/summary.txt"
    else
        mkdir -p /tmp/ab14 "$o/logs"
        cp $B/base14.so /tmp/ab14/base.so
        cp build/steps/14_gqa.so /tmp/ab14/br80_14.so
        timeout -k 5 200 build/v15/ab --backward --rounds 3 --reps 10 --shape 4,8,4096,4096,128 \
            --shape 4,8,16384,16384,128 /tmp/ab14/base.so /tmp/ab14/br80_14.so >"$o/ab14.csv" 2>"$o/ab14.log"
        echo "ab14 rc $?"
        ab_ratios "$o/ab14.csv" | tee -a "$o/summary.txt"
        suite build/steps "$o/logs" 13 14
        suite_summary "$o/logs" | tee -a "$o/summary.txt"
        tar -C "$o" -czf "$o/logs.tar.gz" logs && rm -rf "$o/logs"
    fi
    ;;
bars)
    o=${2:?usage: run.sh bars OUT}
    fa4_install "$o"
    tail -n 1 "$o/fa4_install.txt"
    bars_run "$o" build/steps "steps 13 and 14 as committed (80-row query tiles, D = 128 not causal)"
    standard_run "$o" bwd 13
    grep '^==\|rc ' "$o/bench.log" "$o/bars.log"
    (cd "$o" && tar -czf results.tar.gz ./*.csv ./*.log ./*.txt && ls -la)
    ;;
suite)
    o=${2:?usage: run.sh suite OUT}
    mkdir -p "$o/logs"
    suite "$(steps_with 13_backward_wgmma=$B/br80.so 14_gqa=$B/br80_14.so)" "$o/logs" 13 14
    suite_summary "$o/logs" | tee "$o/summary.txt"
    tar -C "$o" -czf "$o/logs.tar.gz" logs && rm -rf "$o/logs"
    ;;
*) sed -n 2,37p "$X/run.sh"; exit 2 ;;
esac
