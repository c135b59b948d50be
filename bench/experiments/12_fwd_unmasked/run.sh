#!/usr/bin/env bash
# 12_fwd_unmasked: the forward (steps 12-14) compiled without its mask for problems with nothing
# to mask (README). Launch by launch against the steps before it (build/var12u: old12.so,
# old13.so, old14.so: the steps at 29016e7, built with $NV as pack.sh did then) where the new
# kernel runs (not causal, Nk a multiple of the key tile: 128 at D = 64, 160 at D = 128) and one
# causal shape, the null test; then attn run against the CPU (or step 00 on the GPU for long
# cases) on shapes that run it, far inputs too, and memcheck on two.
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs): run.sh OUT (~2 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .git-sha; } >"$o/gpu.txt"
for st in 12_three_warpgroups 13_backward_wgmma 14_gqa; do
    n=${st%%_*}
    mkdir -p /tmp/u$n && cp build/var12u/old$n.so /tmp/u$n/base.so && cp build/steps/$st.so /tmp/u$n/new.so
done
timeout -k 5 150 build/v15/ab --rounds 5 --reps 10 \
    --shape 4,8,16384,16384,64 --shape 4,8,8192,8192,64 --shape 4,8,4096,4096,64 \
    --shape 4,8,16000,16000,128 --shape 4,8,2048,2048,64 --shape 4,8,4096,4096,64,c \
    /tmp/u12/base.so /tmp/u12/new.so >"$o/ab_12.csv" 2>>"$o/ab.log"
echo "12 rc $?" >>"$o/ab.log"
timeout -k 5 100 build/v15/ab --rounds 5 --reps 10 \
    --shape 4,8,16384,16384,64 --shape 4,32,4096,4096,64,8 /tmp/u14/base.so /tmp/u14/new.so \
    >"$o/ab_14.csv" 2>>"$o/ab.log"
echo "14 rc $?" >>"$o/ab.log"
{ echo "step 12's forward, the unmasked kernel over the step before (time, lowest-highest over rounds)"
  ab_ratios "$o/ab_12.csv"
  echo "step 14's forward, the same"
  ab_ratios "$o/ab_14.csv"; } | tee "$o/ab_ratios.txt"
{
    for st in 12 13 14; do
        quick_runs build/steps $st "" "2,3,777,1024,64" "1,2,1000,4096,64" "1,2,65,128,64" \
            "2,2,1000,960,128" "1,1,4000,4096,64" "3,5,1,256,64"
        quick_runs build/steps $st "--inputs far" "1,2,1000,512,64" "1,2,333,320,128"
    done
    quick_runs build/steps 14 "" "1,8,1000,384,64,2" "2,8,777,640,128,8"
    for sh in "1,2,777,384,64" "1,3,1000,640,128"; do
        # shellcheck disable=SC2086
        timeout -k 5 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
            build/attn run --step 12 --shape $sh --reps 1 2>&1 | grep -E "ERROR SUMMARY|^check"
        echo "memcheck $sh rc ${PIPESTATUS[0]}"
    done
} >"$o/checks.txt" 2>&1
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS, $(grep -E 'FAIL|rror' "$o/checks.txt" | grep -vc 'ERROR SUMMARY: 0 errors') FAIL or error"
grep 'memcheck' "$o/checks.txt"
