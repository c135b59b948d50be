#!/usr/bin/env bash
# 12_fwd_split: the forward's key tiles before the first that needs the mask run by a copy of the
# loop compiled without it, the rest by one with it (README). Builds, here (after make):
# run.sh build -> build/var12s/s12.so, s13.so, s14.so (split12/13/14.patch on the steps).
# There: launch by launch against the steps as committed, at causal shapes (both head dims, N =
# 2048-16384), a ragged not-causal one (only its last key tile masks) and an aligned one (the
# null test: the kernel without the mask, unchanged); then attn run against the CPU (or step 00
# on the GPU) with the builds in the steps' places, causal and ragged, far inputs too; the check
# lines of four shapes against the steps' digit for digit (the same decisions per tile, so the
# same arithmetic); memcheck on two.
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs): run.sh OUT (~3 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
E=bench/experiments/12_fwd_split d=build/var12s
if [ "${1:-}" = build ]; then
    mkdir -p $d
    for st in 12_three_warpgroups 13_backward_wgmma 14_gqa; do
        n=${st%%_*}
        git apply $E/split$n.patch || exit 1
        # shellcheck disable=SC2086
        $NV steps/$st/attention.cu -o $d/s$n.so || { git checkout steps/$st; exit 1; }
        git checkout steps/$st
    done
    exit 0
fi
o=${1:?usage: run.sh OUT | run.sh build}; mkdir -p "$o" && o=$(cd "$o" && pwd)
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .git-sha; } >"$o/gpu.txt"
for st in 12_three_warpgroups 14_gqa; do
    n=${st%%_*}
    mkdir -p /tmp/f$n && cp build/steps/$st.so /tmp/f$n/base.so && cp $d/s$n.so /tmp/f$n/split.so
done
timeout -k 5 200 build/v15/ab --rounds 5 --reps 10 \
    --shape 4,8,16384,16384,64,c --shape 4,8,8192,8192,64,c --shape 4,8,4096,4096,64,c \
    --shape 4,8,2048,2048,64,c --shape 4,8,16384,16384,128,c --shape 4,8,4096,4096,128,c \
    --shape 4,8,4000,4000,64 --shape 4,8,4096,4096,64 \
    /tmp/f12/base.so /tmp/f12/split.so >"$o/ab_12.csv" 2>>"$o/ab.log"
echo "12 rc $?" >>"$o/ab.log"
timeout -k 5 100 build/v15/ab --rounds 5 --reps 10 \
    --shape 4,32,4096,4096,64,8,c --shape 4,8,16384,16384,64,c \
    /tmp/f14/base.so /tmp/f14/split.so >"$o/ab_14.csv" 2>>"$o/ab.log"
echo "14 rc $?" >>"$o/ab.log"
{ echo "step 12's forward, split over the step (time, lowest-highest over rounds)"
  ab_ratios "$o/ab_12.csv"
  echo "step 14's forward, the same"
  ab_ratios "$o/ab_14.csv"; } | tee "$o/ab_ratios.txt"
sd=$(steps_with 12_three_warpgroups=$d/s12.so 13_backward_wgmma=$d/s13.so 14_gqa=$d/s14.so)
{
    for st in 12 13 14; do
        quick_runs "$sd" $st "--causal" "2,3,777,1000,64" "1,2,1000,777,128" "1,2,4000,4100,64" \
            "1,1,8200,8200,128"
        quick_runs "$sd" $st "" "2,3,1000,1000,64" "1,2,700,1000,128"
        quick_runs "$sd" $st "--inputs far --causal" "1,2,1000,1000,64" "1,2,777,640,128"
    done
    quick_runs "$sd" 14 "--causal" "1,8,1000,1000,64,2" "2,8,777,900,128,8"
    for sh in "1,2,777,1000,64 --causal" "1,3,1000,700,128 --causal"; do
        # shellcheck disable=SC2086
        ATTN_STEPS_DIR=$sd timeout -k 5 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
            build/attn run --step 12 --shape $sh --reps 1 2>&1 | grep -E "ERROR SUMMARY|^check"
        echo "memcheck $sh rc ${PIPESTATUS[0]}"
    done
} >"$o/checks.txt" 2>&1
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS, $(grep -E 'FAIL|rror' "$o/checks.txt" | grep -vc 'ERROR SUMMARY: 0 errors') FAIL or error"
same_lines "$sd" 12 "" "$o/same_bits.txt" "2,3,777,1000,64 --causal" "1,2,1000,777,128 --causal" "1,2,4000,4100,64 --causal" \
    "2,3,1000,1000,64"
