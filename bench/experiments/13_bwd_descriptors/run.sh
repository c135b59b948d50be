#!/usr/bin/env bash
# Step 13's backward with step 12's descriptor fix, and its mask behind a branch, on the H200.
# What a SASS count here found (nvcc 13.0, cuobjdump 13.5; `run.sh build` prints it again): one
# query tile of bwd_main's loop is 645 instructions at D = 128 and 702 at D = 64 (not masked), of
# which 229 and 193 build wgmma descriptors: mma_ABt, mma_AB and mma_AtB build one per k-slice
# from its address, and the warpgroup index they start from (tid / WG) is not known to be the
# same across a warp, so ptxas builds them in ordinary registers and moves each to uniform ones
# (R2UR) before its HGMMA. Step 12's forward had the same and dropped it (../12_descriptors):
#   desc.patch  one descriptor per operand tile, each k-slice's offset added (>> 4) as a
#               constant, and wg read from lane 0 (__shfl_sync): 645 -> 461 (D = 128, masked
#               kernel), 702 -> 557 (D = 64, unmasked), no R2UR left, and the spills gone but for
#               bwd_main<64, false> (4 bytes stored, 12 loaded a tile where there were 20/36)
#   mask.patch  (on desc.patch) the mask out of line with the exponentials, behind a branch that
#               the warpgroup takes alike: ptxas had turned it into a compare and a select per
#               score on every tile (90 instructions a tile at D = 128, 163 at D = 64), so the
#               masked kernel on a tile with nothing to mask ran 461; now ~372 (the unmasked
#               kernel: 368), and at D = 64 the masked kernel spills nothing
# The same operand descriptors, the same values, so the same bits: the change is what ptxas
# issues per tile, not what the tensor cores compute.
#
# Here (nvcc, no GPU):  bench/experiments/13_bwd_descriptors/run.sh build
#   the builds below into build/v13d/NAME.so, their registers and spills (ptxas) and loop lengths
#   (SASS, when cuobjdump is found) in build/v13d/ptxas.txt; build/v15/ab must exist
#   (bench/experiments/15_decode/run.sh build makes it)
# On the H200 (carry build/steps, build/attn, build/tests, build/v13d, build/v15, .device-libs,
# .git-sha):  export LD_LIBRARY_PATH=$PWD/.device-libs; bash bench/experiments/13_bwd_descriptors/run.sh run $OUT
#   ab       ~200 s  build/v15/ab --backward, every build below, launch by launch at the eight bar
#                    shapes (B = 4, H = 8), 3 rounds of 10 (ab.csv); then base:det against
#                    mb:det at two shapes (ab_det.csv), the deterministic backward; then `attn
#                    run --backward` of every build on three ragged shapes (quick.txt: each
#                    build timed was checked)
#   tests    ~300 s  with mb as step 13 and s14_mb as step 14 (ATTN_STEPS_DIR: a copy of
#                    build/steps with those two in place): the whole GPU suite (the check grid's
#                    four input kinds, steps 12-14 forward and backward, the deterministic
#                    backward's repeatability), and beside it bench/sanitize.sh 13 14 in two
#                    copies (memcheck + synccheck, racecheck)
# PARTS="ab tests" (the default) picks parts; ../12_mask_threshold/run.sh runs the same tests with
# its forward change in steps 12-14 as well, so PARTS=ab here when both run in one session.
# OUT receives ab.csv, ab_det.csv, summary.txt (the ratios to base per shape and build, the
# tests' and sanitizers' verdicts) and logs.tar.gz (gpu_tests.txt, sanitize_*.txt, quick.txt,
# ab.log, ptxas.txt).
# The builds (all of step 13 but s14_mb; the flags are BwdTiles<D>'s):
#   base      the step as committed
#   descu     desc.patch
#   mb        desc.patch + mask.patch: the candidate
#   mb_u128   mb, D = 128 runs the unmasked kernel where nothing is masked (UNMASKED, as D = 64)
#   mb_m64    mb, D = 64 runs the masked kernel everywhere (UNMASKED = false)
#   mb_stm64  mb, D = 64 stores dS^T with stmatrix (DS_STMATRIX)
#   mb_dk64   mb, D = 64 issues dK after dQ (DK_AFTER_DQ)
#   mb_all64  mb, D = 64 with both, and the masked kernel everywhere
#   mb_rows64 mb with ../13_dq_rows/rows.patch: dQ at D = 64 by query rows (each warpgroup 64 rows
#             over all 128 keys: half the bytes reduced; 1.5-2 % faster at N = 4096 and 5.6 %
#             slower at 16384 when tried on the step before; it spilled then, not now)
#   mb_rowsdk64  mb_rows64 with dK after dQ at D = 64 (FlashAttention-4's order at D = 64)
#   s14_mb    step 14 with desc.patch + mask.patch (the same hunks; for the tests)
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
X=bench/experiments/13_bwd_descriptors
B=build/v13d
BUILDS="base descu mb mb_u128 mb_m64 mb_stm64 mb_dk64 mb_all64 mb_rows64 mb_rowsdk64"

case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B
    cp steps/13_backward_wgmma/attention.cu $B/base.cu
    patch -s -p1 -o $B/descu.cu steps/13_backward_wgmma/attention.cu $X/desc.patch
    patch -s -p1 -o $B/mb.cu $B/descu.cu $X/mask.patch
    for v in mb_u128 mb_m64 mb_stm64 mb_dk64 mb_all64; do cp $B/mb.cu $B/$v.cu; done
    flag $B/mb_u128.cu 128 UNMASKED false true
    flag $B/mb_m64.cu 64 UNMASKED true false
    flag $B/mb_stm64.cu 64 DS_STMATRIX false true
    flag $B/mb_dk64.cu 64 DK_AFTER_DQ false true
    flag $B/mb_all64.cu 64 DS_STMATRIX false true
    flag $B/mb_all64.cu 64 DK_AFTER_DQ false true
    flag $B/mb_all64.cu 64 UNMASKED true false
    patch -s -p1 -o $B/mb_rows64.cu $B/mb.cu bench/experiments/13_dq_rows/rows.patch
    cp $B/mb_rows64.cu $B/mb_rowsdk64.cu
    flag $B/mb_rowsdk64.cu 64 DK_AFTER_DQ false true
    patch -s -p1 -o $B/s14_desc.cu steps/14_gqa/attention.cu $X/desc.patch
    patch -s -p1 -o $B/s14_mb.cu $B/s14_desc.cu $X/mask.patch
    rm -f $B/s14_desc.cu
    for v in $BUILDS s14_mb; do
        # shellcheck disable=SC2086
        $NV -Xptxas -v -o $B/$v.so $B/$v.cu >$B/$v.ptxas 2>&1 &
    done
    wait
    CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /tmp/tools-venv/lib/python3.11/site-packages/nvidia/cu13/bin/cuobjdump)}
    for v in $BUILDS s14_mb; do
        echo "== $v"
        ptxas_summary $B/$v.ptxas '^bwd_main'
        # the loop over query tiles: one trip is a tile's 32 HGMMAs (bench/experiments/tools/sass_loop.py)
        if [ -x "$CUOBJDUMP" ]; then
            "$CUOBJDUMP" -sass $B/$v.so | python3 bench/experiments/tools/sass_loop.py bwd_main 32
        fi
    done >$B/ptxas.txt
    cat $B/ptxas.txt
    [ -x build/v15/ab ] || echo "build/v15/ab missing: bench/experiments/15_decode/run.sh build makes it" >&2
    ;;
run)
    o=${2:?usage: run.sh run OUT}
    mkdir -p "$o"
    tmp=$(mktemp -d)
    sha=$(cat .git-sha 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)
    echo "commit $sha; $(nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader 2>/dev/null)" >"$tmp/log.txt"
    parts=" ${PARTS:-ab tests} "
    vs=""
    for v in $BUILDS; do vs="$vs $B/$v.so"; done
    if [[ $parts == *" ab "* ]]; then
        # shellcheck disable=SC2086
        timeout -k 5 200 build/v15/ab --backward --rounds 3 --reps 10 $BAR_SHAPES $vs >"$o/ab.csv" 2>"$tmp/ab.log"
        echo "ab rc $?" >>"$tmp/log.txt"
        timeout -k 5 60 build/v15/ab --backward --rounds 2 --reps 10 --shape 4,8,16384,16384,128 \
            --shape 4,8,4096,4096,64 $B/base.so:det $B/mb.so:det >"$o/ab_det.csv" 2>>"$tmp/ab.log"
        echo "ab_det rc $?" >>"$tmp/log.txt"
        { for v in $BUILDS; do
              vd=$(steps_with 13_backward_wgmma=$B/$v.so)
              for s in "2,3,300,257,64" "1,4,1000,1000,64 --causal" "2,3,333,517,128 --causal"; do
                  echo "## $v: attn run --step 13 --backward --shape $s"
                  # shellcheck disable=SC2086
                  ATTN_STEPS_DIR=$vd timeout -k 5 60 build/attn run --step 13 --backward --shape $s --reps 2 2>&1 |
                      grep -E "^(check|timed)|FAIL|rror"
              done
          done; } >"$tmp/quick.txt" 2>&1
    fi
    if [[ $parts == *" tests "* ]]; then
        # the candidate as steps 13 and 14, everything else as built
        sd=$(steps_with 13_backward_wgmma=$B/mb.so 14_gqa=$B/s14_mb.so)
        echo "commit $sha, steps 13 and 14 with desc.patch + mask.patch" >"$tmp/gpu_tests.txt"
        suite "$sd" "$tmp" 13 14
    fi
    {
        echo "backward, time of each build over base's, launch by launch (ab.csv: 3 rounds; min-max over rounds)"
        ab_ratios "$o/ab.csv"
        echo
        suite_summary "$tmp"
        echo "quick: $(grep -c PASS "$tmp/quick.txt") PASS, $(grep -c FAIL "$tmp/quick.txt") FAIL"
    } >"$o/summary.txt" 2>&1
    cat "$o/summary.txt"
    cp $B/ptxas.txt "$tmp/" 2>/dev/null
    tar -czf "$o/logs.tar.gz" -C "$tmp" . && rm -rf "$tmp"
    ;;
*)
    sed -n '2,45p' "$0"
    exit 2
    ;;
esac
