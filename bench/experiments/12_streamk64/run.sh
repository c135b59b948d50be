#!/usr/bin/env bash
# Step 12's stream-K at D = 64 too. Not causal, 192-row work tiles leave the last round of the
# persistent grid part empty: at N = 4096, B*H = 32, 704 tiles are 5.33 rounds on 132 SMs, so a
# ninth of the SM time of the run is idle (step 11's 128-row tiles: 7.76 rounds, 3 %, where
# stream-K measured at most +1.5 % and was left to D = 128). sk64.patch turns it on for the
# three-warpgroup kernel when not causal: its partials sized per head dim (Tiles<D>::NWG
# warpgroups), the rest as at D = 128 (SK_MIN_KEY_TILES = 16 key tiles of 128, so N >= 2048).
# Only the D = 64 non-causal kernel changes (the others' PTX is step 12's: checked here); its
# loop is 5 instructions longer (440 against 435, sass_loop.py).
# Prediction: D = 64 not causal, N = 4096: 6 tile-times per SM become 5.33 and two pieces' starts
# and one merge, up to 11 % less time, ~7 % after those; N = 2048 (2.67 rounds) the same; N = 8192
# (10.4 rounds) ~4 %; N = 16384 (20.8 rounds) ~0, maybe 1 % slower for the longer loop.
#   sk12, sk13, sk14   steps 12, 13 and 14 with sk64.patch (13 and 14 share step 12's forward
#                      code; the patch's header hunk is step 12's only). With PERN=1, sk13 and
#                      sk14 are built on ../13_dq_split's pern.patch and pern14.patch
# Here (nvcc, no GPU):  bench/experiments/12_streamk64/run.sh build    (build/v12k/, ptxas.txt)
# On the H200 (carry build/steps, build/attn, build/tests, build/v12k, build/v15, .device-libs;
# LD_LIBRARY_PATH=$PWD/.device-libs):
#   run.sh run OUT    sk12 checked in step 12's place on five stream-K shapes (quick.txt), then
#                     timed against step 12 launch by launch: D = 64 not causal at N = 2k-16k,
#                     and D = 64 causal, D = 128 as controls, 3 rounds of 10 (~1 min); OUT gets
#                     ab.csv, summary.txt, quick.txt
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
B=build/v12k
X=bench/experiments/12_streamk64
SHAPES="--shape 4,8,2048,2048,64 --shape 4,8,4096,4096,64 --shape 4,8,8192,8192,64 --shape 4,8,16384,16384,64
        --shape 2,16,4096,4096,64 --shape 4,8,4096,4096,64,c --shape 4,8,4096,4096,128 --shape 4,8,16384,16384,128"
case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B
    cp build/steps/12_three_warpgroups.so $B/base.so   # ab_ratios divides by base.so's times
    patch -s -p1 -o $B/sk12.cu steps/12_three_warpgroups/attention.cu $X/sk64.patch
    s13=steps/13_backward_wgmma/attention.cu s14=steps/14_gqa/attention.cu
    if [ "${PERN:-0}" = 1 ]; then
        patch -s -p1 -o $B/p13.cu $s13 bench/experiments/13_dq_split/pern.patch
        patch -s -p1 -o $B/p14.cu $s14 bench/experiments/13_dq_split/pern14.patch
        s13=$B/p13.cu s14=$B/p14.cu
    fi
    for s in 13:$s13 14:$s14; do   # every hunk but the header's must apply
        patch -s -p1 -r - --no-backup-if-mismatch -o $B/sk${s%%:*}.cu ${s#*:} $X/sk64.patch >$B/patch${s%%:*}.log 2>&1 || true
        [ "$(grep -c 'FAILED' $B/patch${s%%:*}.log)" -le 1 ] && grep -q 'T::Bc_full, true>(p, q, k, v, o, lse, workspace, stream);' $B/sk${s%%:*}.cu &&
            grep -q 'launch<64, T::NWG, T::Bc_full, true>' $B/sk${s%%:*}.cu
    done
    for v in sk12 sk13 sk14; do
        # shellcheck disable=SC2086
        $NV -Xptxas -v -o $B/$v.so $B/$v.cu >$B/$v.ptxas 2>&1 &
    done
    wait
    for v in sk12 sk13 sk14; do echo "== $v"; ptxas_summary $B/$v.ptxas 'attention_fwd'; done | tee $B/ptxas.txt
    ;;
run)
    o=${2:?usage: run.sh run OUT}
    mkdir -p "$o"
    {   # stream-K's cuts at D = 64 (at least 264 work tiles: fewer take step 11's tiles, no cut):
        # ragged rows and keys, many heads, and GQA in 14
        vd=$(steps_with 12_three_warpgroups=$B/sk12.so 14_gqa=$B/sk14.so)
        quick_runs "$vd" 12 "" "4,8,4096,4096,64" "1,133,200,3000,64" "3,47,257,4099,64" \
            "2,5,5000,2100,64" "4,8,2048,2048,64"
        quick_runs "$vd" 14 "" "4,8,3000,3000,64,2"
    } >"$o/quick.txt" 2>&1
    # shellcheck disable=SC2086
    timeout -k 5 150 build/v15/ab --rounds 3 --reps 10 $SHAPES $B/base.so $B/sk12.so >"$o/ab.csv" 2>"$o/ab.log"
    { echo "forward, sk12's time over step 12's, launch by launch (ab.csv: 3 rounds; min-max)"
      ab_ratios "$o/ab.csv"
      echo "quick: $(grep -c PASS "$o/quick.txt") PASS, $(grep -c FAIL "$o/quick.txt") FAIL"; } >"$o/summary.txt"
    cat "$o/summary.txt"
    ;;
*)
    sed -n '2,25p' "$0"
    exit 2
    ;;
esac
