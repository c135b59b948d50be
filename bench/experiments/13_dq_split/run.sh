#!/usr/bin/env bash
# Step 13's dQ split at D = 64, by query rows (as committed) or by keys, against N. Before the
# rows landed, ../13_bwd_descriptors/ab_run/ timed both (with dK after dQ) against the same base:
# by rows 0.90x at N = 4096 not causal where by keys was 1.01-1.04x, but by keys 0.88-0.89x at
# N = 16384 where by rows was 0.95-0.96x (causal: 0.87-0.88x against 0.90x). If that holds, the
# split is a choice per problem, not per head dim; this finds where it crosses.
#   base       step 13 as committed (by rows, dK after dQ)
#   keys       by keys: ../13_dq_rows/rows.patch reversed (each warpgroup dQ over its own 64
#              keys, all rows: two 64 x 64 pieces, both added onto the same floats, no barrier
#              between the warpgroups); its D = 64 kernels' PTX is that of ab_run's mb_dk64
#   stm        by rows, dS^T stored by stmatrix at D = 64 too (549 instructions a query tile
#              against 595, no spills: ptxas.txt)
#   keys_stm   both
#   pern       the split chosen per problem: by keys from Nq = 8192 on, by rows below, not
#              deterministic (pern.patch: bwd_main<..., KEYS>); every kernel's PTX is base's or
#              keys's (checked here, labels aside). pern14: the same in step 14 (pern14.patch;
#              its by-keys kernels' PTX is step 14's before dQ by rows, with dK after dQ)
# Here (nvcc, no GPU):  bench/experiments/13_dq_split/run.sh build    (build/v13s/, ptxas.txt)
# On the H200 (carry build/steps, build/attn, build/tests, build/v13s, build/v15, .device-libs;
# LD_LIBRARY_PATH=$PWD/.device-libs):
#   run.sh run OUT   each build checked on six D = 64 shapes (ragged, both sides of Nq = 8192),
#                    pern14 on four grouped ones (quick.txt), then timed launch by launch against base at D = 64,
#                    N = 2048 ... 32768, causal and not, 3 rounds of 10 (~2 min); OUT gets ab.csv,
#                    summary.txt (each build's time over base's), quick.txt
#   run.sh tests OUT if pern wins: the GPU suite and bench/sanitize.sh 13 14 with pern and pern14
#                    in the steps' place (~6 min; candidates.sh's suite); OUT gets summary.txt,
#                    logs.tar.gz
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
B=build/v13s
BUILDS="base keys stm keys_stm pern"
SHAPES="--shape 4,8,2048,2048,64 --shape 4,8,2048,2048,64,c --shape 4,8,4096,4096,64 --shape 4,8,4096,4096,64,c
        --shape 4,8,8192,8192,64 --shape 4,8,8192,8192,64,c --shape 4,8,16384,16384,64
        --shape 4,8,16384,16384,64,c --shape 2,8,32768,32768,64"
case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B
    cp steps/13_backward_wgmma/attention.cu $B/base.cu
    cp steps/13_backward_wgmma/attention.cu $B/keys.cu
    # rows.patch reversed: its header-comment hunk and the hunk of issue_dk_wait_dq's last fence
    # no longer match (the flags removed since); the fence is put back by hand below
    patch -s -R -p1 -r - --no-backup-if-mismatch $B/keys.cu bench/experiments/13_dq_rows/rows.patch || true
    python3 - $B/keys.cu <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
a = "        wgmma_wait<1>();   /* dV, dQ */\n        reg_fence(dv);\n        reg_fence(dq);"
assert s.count(a) == 1, "issue_dk_wait_dq's fence not found"
s = s.replace(a, "        wgmma_wait<1>();   /* dV, dQ */\n        reg_fence(dv);\n#pragma unroll\n"
                 "        for (int h = 0; h < PIECES; h++)\n            reg_fence(dq[h]);")
open(p, "w").write(s)
PY
    patch -s -p1 -o $B/pern.cu steps/13_backward_wgmma/attention.cu bench/experiments/13_dq_split/pern.patch
    patch -s -p1 -o $B/pern14.cu steps/14_gqa/attention.cu bench/experiments/13_dq_split/pern14.patch
    cp $B/base.cu $B/stm.cu
    cp $B/keys.cu $B/keys_stm.cu
    flag $B/stm.cu 64 DS_STMATRIX false true
    flag $B/keys_stm.cu 64 DS_STMATRIX false true
    grep -q "DS_STMATRIX = true, LSE2_EARLY = false" $B/stm.cu && grep -q "PIECES" $B/keys.cu
    for v in $BUILDS pern14; do
        # shellcheck disable=SC2086
        $NV -Xptxas -v -o $B/$v.so $B/$v.cu >$B/$v.ptxas 2>&1 &
    done
    wait
    for v in $BUILDS pern14; do
        echo "== $v"
        ptxas_summary $B/$v.ptxas '^bwd_mainILi64'
        sass_counts bwd_mainILi64 32 $B/$v.so
    done >$B/ptxas.txt
    cat $B/ptxas.txt
    [ -x build/v15/ab ] || echo "build/v15/ab missing: bench/experiments/15_decode/run.sh build makes it" >&2
    ;;
run)
    o=${2:?usage: run.sh run OUT}
    mkdir -p "$o"
    {   # each build in step 13's place: ragged shapes (masked kernel, padded keys), the unmasked
        # kernel at N = 16384, both sides of Nq = 8192, causal; attn run checks each against the
        # fp64 reference (or step 00)
        for v in $BUILDS; do
            echo "# $v"
            quick_runs "$(steps_with 13_backward_wgmma=$B/$v.so)" 13 --backward "2,3,300,257,64" \
                "1,4,1000,1000,64 --causal" "1,2,16384,16384,64" "1,2,777,4096,64" \
                "1,2,8200,8300,64 --causal" "1,2,9000,8191,64"
        done
        # pern14: step 14 with groups on both sides of Nq = 8192, and the deterministic form
        echo "# pern14"
        quick_runs "$(steps_with 14_gqa=$B/pern14.so)" 14 --backward "1,8,8200,8300,64,2 --causal" \
            "1,4,9000,8191,64,1" "2,8,1000,777,64,4" "1,4,8192,8192,64,2 --deterministic"
    } >"$o/quick.txt" 2>&1
    vs=""
    for v in $BUILDS; do vs="$vs $B/$v.so"; done
    # shellcheck disable=SC2086
    timeout -k 5 240 build/v15/ab --backward --rounds 3 --reps 10 $SHAPES $vs >"$o/ab.csv" 2>"$o/ab.log"
    { echo "backward at D = 64, each build's time over base's, launch by launch (ab.csv: 3 rounds; min-max)"
      ab_ratios "$o/ab.csv"
      echo "quick: $(grep -c PASS "$o/quick.txt") PASS, $(grep -c FAIL "$o/quick.txt") FAIL"; } >"$o/summary.txt"
    cat "$o/summary.txt"
    ;;
tests)
    o=${2:?usage: run.sh tests OUT}
    mkdir -p "$o"
    tmp=$(mktemp -d)
    sd=$(steps_with 13_backward_wgmma=$B/pern.so 14_gqa=$B/pern14.so)
    echo "commit $(cat .git-sha 2>/dev/null); steps 13 and 14 as pern and pern14 (13_dq_split)" >"$tmp/gpu_tests.txt"
    suite "$sd" "$tmp" 13 14
    suite_summary "$tmp" >"$o/summary.txt" 2>&1
    cat "$o/summary.txt"
    tar -czf "$o/logs.tar.gz" -C "$tmp" .
    ;;
*)
    sed -n '2,29p' "$0"
    exit 2
    ;;
esac
