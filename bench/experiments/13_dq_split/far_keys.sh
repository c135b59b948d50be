#!/usr/bin/env bash
# dQ by keys (D = 64, Nq >= 16384) on the rows far from zero: the check grid's shape that reaches
# it is LONG, and LONG shapes check only their forward on far inputs, so this runs attn run's
# check (fp64 CPU reference; every 64-row block) on small-Nk shapes with Nq = 16384 and 16500,
# Nk a multiple of 128 or not, causal and not, steps 13 and 14 (14 with groups), each input kind.
# attn skips far inputs above 8e6 scores (dQ's bound is a CPU model, slow there): of these, only
# the first shape checks far; the second call ran the four below it (FAR2) on far inputs.
# On the H200 (carry build/steps build/attn .device-libs): far_keys.sh OUT
set -u
cd "$(dirname "$0")/../../.."
o=${1:?usage: far_keys.sh OUT}
mkdir -p "$o"
for m in far normal large late; do
    for r in "13 1,1,16384,200,64" "13 1,2,16500,256,64 --causal" "13 2,1,16384,333,64 --causal" \
             "14 1,4,16384,200,64,2" "14 1,4,16500,129,64,1 --causal"; do
        echo "## step ${r%% *} ${r#* } --inputs $m"
        # shellcheck disable=SC2086
        timeout -k 5 60 build/attn run --backward --reps 1 --inputs $m --step ${r%% *} --shape ${r#* } 2>&1 |
            grep -E "^check|FAIL|rror|NaN"
    done
done >"$o/far_keys.txt" 2>&1
FAR2=("13 1,1,16384,129,64 --causal" "13 1,1,16500,300,64" "14 1,2,16384,200,64,1" "14 1,2,16400,130,64,1 --causal")
for r in "${FAR2[@]}"; do
    echo "## step ${r%% *} ${r#* } --inputs far"
    # shellcheck disable=SC2086
    timeout -k 5 60 build/attn run --backward --reps 1 --inputs far --step ${r%% *} --shape ${r#* } 2>&1 |
        grep -E "^check|FAIL|rror|NaN"
done >"$o/far_keys2.txt" 2>&1
cat "$o/far_keys2.txt" >>"$o/far_keys.txt"
echo "$(grep -c -- '-> PASS' "$o/far_keys.txt") PASS, $(grep -c -- 'FAIL' "$o/far_keys.txt") FAIL of $(grep -c '^##' "$o/far_keys.txt") runs" | tee "$o/summary.txt"
