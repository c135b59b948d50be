#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck and synccheck on each given step, on a few small shapes
# that exercise every edge of the tiles (ragged Nq and Nk, Nq != Nk both ways, causal, N = 1),
# forward and, where the step has one, backward. The whole check grid under racecheck would take
# hours; these shapes reach every code path of the kernels (first, interior, diagonal and ragged
# tiles) in seconds. Exit status 1 if any tool reports an error.
#   bench/sanitize.sh 03 04 05 > sanitize.txt
set -uo pipefail
cd "$(dirname "$0")/.."
cs=${CUDA:-/usr/local/cuda}/bin/compute-sanitizer
command -v "$cs" >/dev/null || cs=$(command -v compute-sanitizer) ||
    { echo "bench/sanitize.sh: compute-sanitizer is missing (it comes with the full CUDA toolkit)" >&2; exit 2; }
shapes=("1,2,129,127,64 --causal" "1,1,65,300,128" "1,1,300,65,128 --causal")
status=0
for s in "$@"; do
    s=$(printf '%02d' "$((10#$s))")
    passes=("")
    build/attn list | awk -v s="$s" '$1 ~ "^" s "_" && /fwd\+bwd/ { f = 1 } END { exit !f }' &&
        passes=("" --backward)
    for tool in memcheck racecheck synccheck; do
        for shape in "${shapes[@]}"; do
            for pass in "${passes[@]}"; do
                out=$("$cs" --tool "$tool" --error-exitcode 99 build/attn run --step "$s" \
                      --shape $shape --dtype bf16 $pass --reps 1 2>&1)
                rc=$?
                summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" <<<"$out" | tail -1)
                verdict=$(grep -E "^result|-> (PASS|FAIL)" <<<"$out" | tail -1)
                echo "step $s $tool ${pass:---forward} $shape: rc $rc; ${summary:-no summary}; ${verdict}"
                [ $rc -eq 0 ] || { status=1; grep -E "Invalid|race|Race|hazard|barrier" <<<"$out" | head -5; }
            done
        done
    done
done
exit $status
