#!/usr/bin/env bash
# Where step 12's forward loses cycles against FlashAttention-4 (7-9 % more for the same tensor
# work, ../12_streamk64/ncu_fwd.txt): a timeline of one block's consumer warpgroups, and Nsight
# Compute's warp samples by SASS line.
#   trace.so   step 12 with trace.patch: clock64 stamps of block 0's warpgroups, one row per loop
#              trip (waits for K/V, turn taken, issued, S done, softmax done, P V done), written by
#              build/v15/ab (AB_TRACE_DIR) after it times trace.so beside base.so (the step)
# Here (nvcc, no GPU):  run.sh build          (build/v12t/)
# On the H200 (carry build/steps, build/attn, build/v12t, build/v15, .device-libs;
# LD_LIBRARY_PATH=$PWD/.device-libs):
#   run.sh run OUT    ab.csv (base against trace, launch by launch, 2 rounds of 10), trace_*.csv,
#                     ncu: the step's full-set profile at 4,8,4096,4096,128 and its SASS source page
#                     (source_sass.csv.gz; stalls.txt from ../12_backward's stalls.py, in git's
#                     history at 5597c2a)
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
B=build/v12t
X=bench/experiments/12_fwd_timeline
SHAPES="--shape 4,8,4096,4096,128 --shape 4,8,16384,16384,128 --shape 4,8,4096,4096,64,c
        --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,128,c"
case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p $B
    cp build/steps/12_three_warpgroups.so $B/base.so
    patch -s -p1 -o $B/trace.cu steps/12_three_warpgroups/attention.cu $X/trace.patch
    # shellcheck disable=SC2086
    $NV -Xptxas -v -o $B/trace.so $B/trace.cu >$B/trace.ptxas 2>&1
    ptxas_summary $B/trace.ptxas attention_fwd
    ;;
run)
    o=${2:?usage: run.sh run OUT}
    mkdir -p "$o/trace"
    # shellcheck disable=SC2086
    AB_TRACE_DIR=$o/trace timeout -k 5 200 build/v15/ab --rounds 2 --reps 10 $SHAPES $B/base.so $B/trace.so \
        >"$o/ab.csv" 2>"$o/ab.log"
    echo "ab rc $?"; ab_ratios "$o/ab.csv"
    w=$(mktemp -d)
    timeout -k 5 200 ncu --clock-control none --set full --import-source yes -k regex:attention_fwd \
        --launch-skip 1 -c 1 -o $w/fwd128 build/v15/ab --rounds 1 --reps 1 --shape 4,8,4096,4096,128 \
        $B/base.so >"$o/ncu_full.log" 2>&1
    echo "ncu rc $?"
    timeout 100 ncu -i $w/fwd128.ncu-rep --page source --csv --print-source sass 2>>"$o/ncu_full.log" |
        gzip >"$o/source_sass.csv.gz"
    timeout 100 ncu -i $w/fwd128.ncu-rep --page details >"$o/details.txt" 2>>"$o/ncu_full.log"
    ls -la "$o"
    ;;
*) echo "usage: run.sh build | run OUT" >&2; exit 2 ;;
esac
