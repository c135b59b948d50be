#!/usr/bin/env bash
# The backward's next candidate (fin_run/: 7-10 % faster than step 13 at D = 64, 2-3 % at D = 128,
# not causal, in one A/B), built for steps 13 and 14, to be checked and timed on the H200:
#   fin13  step 13 + ../13_dq_rows/rows.patch (dQ by query rows at D = 64), DK_AFTER_DQ at D = 64,
#          UNMASKED at D = 128 (BwdTiles<D>'s flags)
#   fin14  step 14 + ../13_dq_rows/rows14.patch (the same, its dQ pieces indexed by the query head
#          a block walks) and the same flags
# Here (nvcc, no GPU):  bench/experiments/13_bwd_descriptors/fin.sh build   (build/v13f/, ptxas.txt)
# On the H200 (carry build/steps, build/attn, build/tests, build/v13f, build/v15, .device-libs,
# .git-sha; export LD_LIBRARY_PATH=$PWD/.device-libs):
#   fin.sh run OUT   ab (~60 s: step 13 as committed against fin13, launch by launch, the eight bar
#                    shapes, 3 rounds of 10), then the GPU suite and bench/sanitize.sh 13 14 with
#                    fin13 and fin14 in place (~330 s); OUT gets ab.csv, summary.txt, logs.tar.gz
# If both hold, they land (the flags and the patches in the steps), and the bars run follows with
# FlashAttention-4 (../tools/lease.sh, call 3).
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
B=build/v13f
R=bench/experiments/13_dq_rows
case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B
    cp build/steps/13_backward_wgmma.so $B/base.so   # ab_ratios divides by base.so's times
    patch -s -p1 -o $B/fin13.cu steps/13_backward_wgmma/attention.cu $R/rows.patch
    patch -s -p1 -o $B/fin14.cu steps/14_gqa/attention.cu $R/rows14.patch
    for v in fin13 fin14; do
        flag $B/$v.cu 64 DK_AFTER_DQ false true
        flag $B/$v.cu 128 UNMASKED false true
        # shellcheck disable=SC2086
        $NV -Xptxas -v -o $B/$v.so $B/$v.cu >$B/$v.ptxas 2>&1 &
    done
    wait
    for v in fin13 fin14; do echo "== $v"; ptxas_summary $B/$v.ptxas '^bwd_main'; done | tee $B/ptxas.txt
    ;;
run)
    o=${2:?usage: fin.sh run OUT}
    mkdir -p "$o"
    tmp=$(mktemp -d)
    sha=$(cat .git-sha 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)
    # shellcheck disable=SC2086
    timeout -k 5 120 build/v15/ab --backward --rounds 3 --reps 10 $BAR_SHAPES $B/base.so $B/fin13.so >"$o/ab.csv" 2>"$tmp/ab.log"
    sd=$(steps_with 13_backward_wgmma=$B/fin13.so 14_gqa=$B/fin14.so)
    echo "commit $sha; steps 13 and 14 as fin13 and fin14 (fin.sh)" >"$tmp/gpu_tests.txt"
    suite "$sd" "$tmp" 13 14
    { echo "fin13's time over step 13's (ab.csv: 3 rounds; min-max)"; ab_ratios "$o/ab.csv"; echo
      suite_summary "$tmp"; } >"$o/summary.txt" 2>&1
    cat "$o/summary.txt"
    tar -czf "$o/logs.tar.gz" -C "$tmp" .
    ;;
*)
    sed -n '2,17p' "$0"
    exit 2
    ;;
esac
