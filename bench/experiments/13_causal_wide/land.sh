#!/usr/bin/env bash
# The landing of 80-row causal tiles at D = 128 from Nq = 8192 (BWD_WIDE_CAUSAL_NQ) in steps 13
# and 14, with the forward's stages (../11_fwd_stages) landed beside it: checks across the
# threshold (Nq 8191 / 8192 / 8200; far rows; deterministic; step 14 with 4 and 2 K/V heads),
# the deterministic and two-stream GPU tests, memcheck on a causal 8192 problem of each step, then
# launch by launch each step against its build as committed before (base.so: b13, b14), and the
# deterministic backward's price on the new tiles.
# Builds, here (make first; ../tools/pack.sh): build/var13l/b13.so and b14.so, steps 13 and 14 at aa1fc89.
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~1 min): land.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: land.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
d=build/steps
{
    for st in 13 14; do
        quick_runs "$d" $st "--backward" "1,2,8192,8192,128 --causal" "1,2,8200,8191,128 --causal" \
            "1,2,8191,8200,128 --causal" "2,4,9000,9000,128 --causal"
        quick_runs "$d" $st "--backward --inputs far" "1,2,8200,8200,128 --causal" "1,2,8192,777,128 --causal"
        quick_runs "$d" $st "--backward --deterministic" "1,4,8192,8192,128 --causal" "1,2,8300,8250,128 --causal"
    done
    quick_runs "$d" 14 "--backward" "1,8,8192,8192,128,2 --causal" "2,4,8200,8200,128,1 --causal"
    quick_runs "$d" 14 "--backward --deterministic" "1,8,8192,8192,128,4 --causal"
} >"$o/checks.txt" 2>&1
for t in deterministic_backward_is_repeatable step13_causal_sections_of_heads top_step_two_problems_on_two_streams; do
    timeout -k 5 100 build/tests/gpu --verbose --filter "gpu/$t"
    echo "[exit status $?]"
done >"$o/gpu_tests.txt" 2>&1 &
for st in 13 14; do
    timeout -k 5 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/attn run --step $st --backward \
        --shape 1,2,8200,8192,128 --causal --reps 1 2>&1 | grep -E "ERROR SUMMARY|^check|FAIL|rror"
    echo "step $st memcheck rc ${PIPESTATUS[0]}"
done >"$o/memcheck.txt" 2>&1 &
wait
for st in 13 14; do
    mkdir -p /tmp/l$st && cp build/var13l/b$st.so /tmp/l$st/base.so && cp $d/${st}_*.so /tmp/l$st/new.so
    timeout -k 5 100 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,4096,4096,128,c \
        --shape 4,8,8192,8192,128,c --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,128 \
        --shape 4,8,16384,16384,64,c /tmp/l$st/base.so /tmp/l$st/new.so >"$o/ab_$st.csv" 2>>"$o/ab.log"
    timeout -k 5 60 build/v15/ab --rounds 3 --reps 6 --shape 4,8,16384,16384,128 --shape 4,8,16384,16384,64 \
        /tmp/l$st/base.so /tmp/l$st/new.so >"$o/abf_$st.csv" 2>>"$o/ab.log"
    echo "step $st backward"; ab_ratios "$o/ab_$st.csv"
    echo "step $st forward"; ab_ratios "$o/abf_$st.csv"
done | tee "$o/ab_ratios.txt"
# the deterministic backward's price on the new tiles: step 13 deterministic over its default
mkdir -p /tmp/d13 && cp $d/13_*.so /tmp/d13/base.so && cp $d/13_*.so /tmp/d13/det.so
timeout -k 5 100 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,8192,8192,128,c \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,128 /tmp/d13/base.so /tmp/d13/det.so:det \
    >"$o/ab_det.csv" 2>>"$o/ab.log"
echo "step 13 deterministic over default"; ab_ratios "$o/ab_det.csv" | tee -a "$o/ab_ratios.txt"
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS against the CPU, $(grep -c 'vs step 00' "$o/checks.txt") against step 00, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
grep -E 'Synthesis|exit status' "$o/gpu_tests.txt"
cat "$o/memcheck.txt"
