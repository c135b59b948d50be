#!/usr/bin/env bash
# The three pending changes (../README.md, "Pending") measured in one lease of the H200: four
# calls issued back to back, so that the machine stays warm and FlashAttention-4's parts, which
# travel in two calls, meet in /tmp. No call waits on a decision: the last two time the candidates
# in the steps' place, speculatively; their CSVs become canonical only for a change that calls 1
# and 2 say to land (else they stay here as an experiment).
# Here, before the calls:
#   make && make tests; the three run.sh build; pack-libs; git rev-parse --short HEAD >.git-sha
#   bash bench/experiments/tools/lease.sh pack     builds and libraries in .carry/b.txz (~6 MB),
#                                                  FlashAttention-4's parts in build/fa4s1, build/fa4s2
# On the H200, export LD_LIBRARY_PATH=$PWD/.device-libs first, then:
#   call 1, carry .carry build/fa4s1:  lease.sh 1 $OUT   backward A/B (13_bwd_descriptors, PARTS=ab)
#   call 2, carry .carry build/fa4s2:  lease.sh 2 $OUT   forward A/B, then the GPU suite and the
#                                      sanitizers with every candidate in place (12_mask_threshold);
#                                      FlashAttention-4 installed beside the suite
#   call 3, carry .carry:              lease.sh 3 $OUT   the bars sweep: step 12's forward (as
#                                      committed: call 2 had thr slower) and step 13's backward
#                                      (desc + mask), then SDPA cuDNN and FA4
#   call 4, carry .carry:              lease.sh 4 $OUT   decode: merge checked as step 15 (vcheck),
#                                      the variants A/B, the decode sweep with merge as step 15, peers
#   call 5 (a fresh machine), carry .carry: lease.sh 5 $OUT   the far case call 2's suite failed,
#                                      fin13 against mb, Nsight Compute on mb at D = 64, the suite with
#                                      mb in steps 13 and 14 (ran past its 590 s: its logs were taken
#                                      from the machine's /tmp by one more call; write under $OUT)
# Run on 2026-12-01 at 3f5a207 (results: ../README.md, "The pending changes, measured"). The
# patches landed since: to rebuild, check out 3f5a207's steps first.
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
case ${1:-} in
pack)
    set -e
    mkdir -p .carry build/fa4s1 build/fa4s2
    # shellcheck disable=SC2086
    tar cf - ${LEASE_BUILDS:-build/steps build/attn build/tests build/v15 build/v13d build/v12m build/v13f/fin13.so} \
        .device-libs .git-sha | xz -T2 -6 >.carry/b.txz
    a=out/fa4/a b=out/fa4/b
    [ -f $a/cu13.part.aa ] || { cat build/fa4a1/aa.00 build/fa4a2/aa.01 >$a/cu13.part.aa 2>/dev/null || true; }
    rm -f build/fa4s1/* build/fa4s2/*
    # FlashAttention-4's 85 MB in two carries of under 64 MiB with the tree (9 MiB) and b.txz
    split -b 29M $a/cu13.part.aa build/fa4s1/aa.
    mv build/fa4s1/aa.ab build/fa4s2/
    cp $b/cu13.part.ab $b/apache_tvm_ffi-*.whl build/fa4s1/
    for f in $b/*.whl; do [ -f build/fa4s1/$(basename $f) ] || cp $f build/fa4s2/; done
    du -sh .carry build/fa4s1 build/fa4s2
    ;;
unpack)   # on the H200: the builds, and this call's share of FlashAttention-4 in /tmp/fa4
    tar xJf .carry/b.txz
    mkdir -p /tmp/fa4/b
    for d in build/fa4s1 build/fa4s2; do
        [ -d $d ] || continue
        for f in $d/*; do
            case $f in */aa.*) cp $f /tmp/fa4/ ;; *) cp $f /tmp/fa4/b/ ;; esac
        done
    done
    ls /tmp/fa4 /tmp/fa4/b | paste -sd' '
    ;;
1)
    o=${2:?usage: lease.sh 1 OUT}
    bash "$0" unpack
    PARTS=ab bash bench/experiments/13_bwd_descriptors/run.sh run "$o/bwd"
    ;;
2)
    o=${2:?usage: lease.sh 2 OUT}
    bash "$0" unpack
    PARTS=ab bash bench/experiments/12_mask_threshold/run.sh run "$o/fwd_ab"
    {   # FlashAttention-4 for calls 3 and 4, on the CPU, while the suite runs
        mkdir -p /tmp/fa4a && cat /tmp/fa4/aa.aa /tmp/fa4/aa.ab >/tmp/fa4a/cu13.part.aa &&
            bash build/v15/fa4-install.sh /tmp/fa4/b /tmp/fa4a
    } >"$o/fa4_install.txt" 2>&1 &
    PARTS=tests bash bench/experiments/12_mask_threshold/run.sh run "$o/fwd_tests"
    wait
    tail -n 2 "$o/fa4_install.txt"
    ;;
3)
    o=${2:?usage: lease.sh 3 OUT}
    bash "$0" unpack
    sd=$(steps_with 13_backward_wgmma=build/v13d/mb.so)
    bars_run "$o" "$sd" "step 12 as committed, step 13 with 13_bwd_descriptors/desc.patch + mask.patch"
    grep -c ',ok' "$o/bars.csv" "$o/peers_bars.csv"
    ;;
4)
    o=${2:?usage: lease.sh 4 OUT}
    bash "$0" unpack
    ATTN_STEPS_DIR=$(steps_with 15_decode=build/v15/merge.so)
    export ATTN_STEPS_DIR
    PARTS="vcheck variants bench peers" VAR_SECS=90 bash bench/experiments/15_decode/run.sh run "$o/dec"
    ;;
5)   # after calls 1-4 (a fresh machine): the far case that failed in call 2, the next backward
    # candidate (fin13), a profile of the backward's worst bar, and the suite with what lands
    o=${2:?usage: lease.sh 5 OUT}
    bash "$0" unpack
    tmp=$(mktemp -d)
    far="--shape 1,16,2,65537,64,2 --dtype bf16 --causal --inputs far --seed 4477492750267102280 --backward"
    for v in base=build/steps/14_gqa.so s14_mb=build/v13d/s14_mb.so cand14=build/v12m/cand14.so; do
        echo "## ${v%%=*}: attn run --step 14_gqa $far"
        # shellcheck disable=SC2086
        ATTN_STEPS_DIR=$(steps_with 14_gqa=${v#*=}) timeout -k 5 90 build/attn run --step 14_gqa $far 2>&1 | grep -v '^timed'
    done >"$tmp/far14.txt" 2>&1
    # shellcheck disable=SC2086
    timeout -k 5 120 build/v15/ab --backward --rounds 3 --reps 10 $BAR_SHAPES build/v13d/base.so build/v13d/mb.so \
        build/v13f/fin13.so >"$o/ab_fin.csv" 2>"$tmp/ab_fin.log"
    echo "ab rc $?" >>"$tmp/ab_fin.log"
    timeout -k 5 120 ncu --clock-control none --section SpeedOfLight --section WarpStateStats \
        --section ComputeWorkloadAnalysis --section Occupancy -k regex:bwd_main --launch-skip 2 --launch-count 1 \
        build/v15/ab --backward --rounds 1 --reps 3 --shape 4,8,4096,4096,64 build/v13d/mb.so >"$tmp/ncu_mb64.txt" 2>&1
    sd=$(steps_with 13_backward_wgmma=build/v13d/mb.so 14_gqa=build/v13d/s14_mb.so)
    echo "commit $(cat .git-sha); steps 13 and 14 with desc.patch + mask.patch" >"$tmp/gpu_tests.txt"
    {   # beside the suite: step 14's far grid, three more seeds, as committed and with the patches
        for seed in 1 2 3; do
            for v in base=build/steps s14_mb=$sd; do
                echo "## ${v%%=*} seed $seed"
                ATTN_STEPS_DIR=${v#*=} timeout -k 5 100 build/attn check --step 14_gqa --inputs far --seed $seed 2>&1 |
                    grep -E 'FAIL|^(OK|FAILED)' | head -n 20
            done
        done
    } >"$tmp/far14_grid.txt" 2>&1 &
    suite "$sd" "$tmp" 13 14
    wait
    { cat "$tmp/far14.txt"; echo; cat "$tmp/far14_grid.txt"; echo; suite_summary "$tmp"; echo; ab_ratios "$o/ab_fin.csv"; } \
        >"$o/summary.txt" 2>&1
    cat "$o/summary.txt"
    tar -czf "$o/logs.tar.gz" -C "$tmp" .
    ;;
*)
    sed -n '2,22p' "$0"
    exit 2
    ;;
esac
