#!/usr/bin/env bash
# The runs of `bench/sanitize.sh 14` that sanitize14_h200/ lacks (its 220 s cut them): synccheck
# from 1,140,130,140,128's backward on, racecheck from 1,100,300,300,64's backward on, the
# grouped shapes included; the same command and line format as bench/sanitize.sh, racecheck
# and synccheck side by side.
#   usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs): sanitize_rest.sh OUT (~2 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: sanitize_rest.sh OUT}; mkdir -p "$o"
run() {   # run TOOL SHAPE PASS...
    local tool=$1 shape=$2 pass out rc
    shift 2
    for pass in "$@"; do
        # shellcheck disable=SC2086
        out=$(compute-sanitizer --tool "$tool" --error-exitcode 99 build/attn run --step 14 --shape $shape \
              --dtype bf16 $pass --reps 1 2>&1)
        rc=$?
        echo "step 14 $tool ${pass:---forward} $shape: rc $rc; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" <<<"$out" |
              tail -1); $(grep -E "^result|-> (PASS|FAIL)" <<<"$out" | tail -1)"
    done
}
{
    echo "commit $(cat .git-sha), $(nvidia-smi --query-gpu=name --format=csv,noheader)"
    run synccheck "1,140,130,140,128" --backward
    for s in "1,2,130,1000,128" "1,133,1,3000,128 --causal" "1,64,64,1400,128 --causal" \
             "1,140,260,65,64 --causal" "1,100,300,300,64 --causal" "1,4,129,257,128,1 --causal" "1,8,200,130,64,2"; do
        run synccheck "$s" "" --backward
    done
} >"$o/sanitize14_synccheck_rest.txt" 2>&1 &
{
    echo "commit $(cat .git-sha), $(nvidia-smi --query-gpu=name --format=csv,noheader)"
    run racecheck "1,100,300,300,64 --causal" --backward
    for s in "1,4,129,257,128,1 --causal" "1,8,200,130,64,2"; do run racecheck "$s" "" --backward; done
} >"$o/sanitize14_racecheck_rest.txt" 2>&1 &
wait
for f in "$o"/sanitize14_*_rest.txt; do echo "$(basename "$f"): $(grep -c 'rc 0;' "$f") clean of $(grep -c '^step ' "$f")"; done
