#!/usr/bin/env bash
# Step 12's forward with the mask's test out of the key loop, on the H200 (one call), and the
# GPU suite with every candidate of this session's SASS counts in place (steps 12-14).
# What the SASS count found (bench/experiments/tools/sass_loop.py, nvcc 13.0): a key tile of
# the D = 64 loop (three warpgroups, 128 keys) runs 435 instructions when nothing is masked,
# FlashAttention-4's 418 (../12_softmax_chains); 92 of the 435 are bookkeeping, and 13 of those
# are the mask's test, needs_mask(k0) = k0 + Bc > Nk || (causal && k0 + Bc - 1 > wg_row0),
# recomputed every tile with its predicates turned into values and back.
#   thr.patch  needs_mask grows with k0, so the tiles that need the mask are j >= jm, with jm
#              computed once per work tile: min(Nk / Bc, causal ? (wg_row0 + 1) / Bc : inf) - j0;
#              the loop compares j alone. The same decisions (checked here for every Nk < 700
#              and four long ones, Bc 128/160/192, causal or not, 22 row offsets, j0 0/1/3:
#              370,524 tiles, none differ), so the same bits; 435 -> 423 a tile at D = 64
#              (three warpgroups), 590 -> 580 (two, Bc = 192), 571 -> 558 (D = 128, Bc = 160),
#              487 -> 476 (D = 128, Bc = 128). Steps 13 and 14 carry the same forward: the
#              patch applies to them as it is.
#   Prediction: the softmax chains (../12_softmax_chains) took 14 instructions a tile and
#   measured +0.5-2.8 %; this takes 10-13: +0.5-2 %, most at D = 64.
#
# Here (nvcc, no GPU):  bench/experiments/12_mask_threshold/run.sh build
#   build/v12m/base.so (step 12) and thr.so (with thr.patch), and the candidates for the suite:
#   cand13.so and cand14.so, steps 13 and 14 with thr.patch and ../13_bwd_descriptors' desc.patch
#   and mask.patch; registers, spills and loop lengths in build/v12m/ptxas.txt; build/v15/ab
#   must exist (bench/experiments/15_decode/run.sh build makes it)
# On the H200 (carry build/steps, build/attn, build/tests, build/v12m, build/v15, .device-libs,
# .git-sha):  export LD_LIBRARY_PATH=$PWD/.device-libs; bash bench/experiments/12_mask_threshold/run.sh run $OUT
#   ab      ~60 s   build/v15/ab, forward, base against thr at the eight bar shapes, 3 rounds of 10
#   tests  ~330 s   thr as step 12, cand13 and cand14 as 13 and 14 (ATTN_STEPS_DIR): the whole GPU
#                   suite (the check grid's four input kinds, steps 12-14 forward and backward),
#                   beside it bench/sanitize.sh 12 13 14 in two copies (memcheck + synccheck,
#                   racecheck)
# PARTS="ab tests" (the default) picks parts. OUT: ab.csv, summary.txt, logs.tar.gz.
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
X=bench/experiments/12_mask_threshold
D=bench/experiments/13_bwd_descriptors
B=build/v12m

case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B
    cp steps/12_three_warpgroups/attention.cu $B/base.cu
    patch -s -p1 -o $B/thr.cu steps/12_three_warpgroups/attention.cu $X/thr.patch
    for s in 13:13_backward_wgmma 14:14_gqa; do
        n=${s%%:*} dir=${s#*:}
        patch -s -p1 -o $B/c$n.a.cu steps/$dir/attention.cu $X/thr.patch
        patch -s -p1 -o $B/c$n.b.cu $B/c$n.a.cu $D/desc.patch
        patch -s -p1 -o $B/cand$n.cu $B/c$n.b.cu $D/mask.patch
        rm -f $B/c$n.a.cu $B/c$n.b.cu
    done
    for v in base thr cand13 cand14; do
        # shellcheck disable=SC2086
        $NV -Xptxas -v -o $B/$v.so $B/$v.cu >$B/$v.ptxas 2>&1 &
    done
    wait
    CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /tmp/tools-venv/lib/python3.11/site-packages/nvidia/cu13/bin/cuobjdump)}
    for v in base thr cand13 cand14; do
        echo "== $v"
        ptxas_summary $B/$v.ptxas '^(attention_fwd|bwd_main)'
        if [ -x "$CUOBJDUMP" ]; then   # one trip: D/16 + Bc/16 wgmmas (forward), 32 (backward)
            "$CUOBJDUMP" -sass $B/$v.so >$B/$v.sass
            for k in "attention_fwdILi64ELi3ELi128 12" "attention_fwdILi64ELi2ELi192 16" \
                     "attention_fwdILi128ELi2ELi160 18" "attention_fwdILi128ELi2ELi128 16" "bwd_main 32"; do
                # shellcheck disable=SC2086
                python3 bench/experiments/tools/sass_loop.py $k <$B/$v.sass
            done
            rm -f $B/$v.sass
        fi
    done >$B/ptxas.txt
    cat $B/ptxas.txt
    [ -x build/v15/ab ] || echo "build/v15/ab missing: bench/experiments/15_decode/run.sh build makes it" >&2
    ;;
run)
    o=${2:?usage: run.sh run OUT}
    mkdir -p "$o"
    tmp=$(mktemp -d)
    parts=" ${PARTS:-ab tests} "
    sha=$(cat .git-sha 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)
    echo "commit $sha; $(nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader 2>/dev/null)" >"$tmp/log.txt"
    if [[ $parts == *" ab "* ]]; then
        # shellcheck disable=SC2086
        timeout -k 5 150 build/v15/ab --rounds 3 --reps 10 $BAR_SHAPES $B/base.so $B/thr.so >"$o/ab.csv" 2>"$tmp/ab.log"
        echo "ab rc $?" >>"$tmp/log.txt"
    fi
    if [[ $parts == *" tests "* ]]; then
        sd=$(steps_with 12_three_warpgroups=$B/thr.so 13_backward_wgmma=$B/cand13.so 14_gqa=$B/cand14.so)
        echo "commit $sha; step 12 with thr.patch, 13 and 14 with thr.patch + ../13_bwd_descriptors' desc.patch and mask.patch" >"$tmp/gpu_tests.txt"
        suite "$sd" "$tmp" 12 13 14
    fi
    {
        [ -s "$o/ab.csv" ] && echo "forward, thr's time over base's, launch by launch (ab.csv: 3 rounds; min-max over rounds)"
        ab_ratios "$o/ab.csv"
        suite_summary "$tmp"
    } >"$o/summary.txt" 2>&1
    cat "$o/summary.txt"
    cp $B/ptxas.txt "$tmp/" 2>/dev/null
    tar -czf "$o/logs.tar.gz" -C "$tmp" . && rm -rf "$tmp"
    ;;
*)
    sed -n '2,38p' "$0"
    exit 2
    ;;
esac
