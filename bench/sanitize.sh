#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck and synccheck on each given step (every step: no
# arguments), on a few small shapes that exercise every edge of the tiles (ragged Nq and Nk, Nq !=
# Nk both ways, Nk a multiple of no tile, causal, N = 1), forward and, where the step has one,
# backward. The whole check grid under racecheck would take hours; these shapes reach every code
# path of the kernels (first, interior, diagonal and ragged tiles) in seconds. The persistent
# forward (step 11, and every later step, which carries its kernel) also gets the shapes that reach
# its scheduler's paths on an H200 (132 SMs; common/check.c's grid says which shape reaches what),
# each small: racecheck is slow. A step that takes grouped-query attention (a 'GQA:' line in `attn
# list`: steps 00 and 14 on) also gets two shapes with fewer K/V heads (--shape's sixth field).
# A decode step (an 'Nq: 1-16 only' line in `attn list`: step 15) runs instead the decode shapes
# below, which reach its paths: one split and many (the combine kernel), 16, 32 and 64-row tiles
# and two row tiles, ragged Nk, causal. A step that takes a deterministic backward (13 on) also
# runs the det shapes below with --deterministic: the dQ writer's turns, not causal and causal.
# TOOLS="memcheck racecheck" runs only those tools (so that several copies can share the work).
# Exit status 1 if any tool reports an error.
#   bench/sanitize.sh 03 04 05 > sanitize.txt
#   bench/sanitize.sh > sanitize.txt       # every step
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
cs=${CUDA:-/usr/local/cuda}/bin/compute-sanitizer
command -v "$cs" >/dev/null || cs=$(command -v compute-sanitizer) ||
    { echo "bench/sanitize.sh: compute-sanitizer is missing (it comes with the full CUDA toolkit)" >&2; exit 2; }
shapes=("1,2,129,127,64 --causal" "1,1,65,300,128" "1,1,300,65,128 --causal"
        "1,1,65,300,64 --causal" "1,2,1,129,128" "1,2,129,1,64 --causal")
top_shapes=(
    "1,133,1,3000,128"            # stream-K, no whole round: 133 tiles by key ranges, 18 cut; Bc 160
    "1,265,1,2500,128"            # a whole round, then stream-K, Nk ragged (15 x 160 + 100), 15 cut
    "1,300,1,2100,64"             # D = 64 persistent: 2 whole rounds, then stream-K (step 12 on)
    "1,1,16384,200,64"            # backward at D = 64, Nq = 16384: 128 query tiles per key tile (13 on)
    "1,140,130,140,128"           # D = 128 persistent, no stream-K: blocks walk 2-3 tiles
    "1,2,130,1000,128"            # the key tile 176 in step 11 (use_bc_alt picks 160 for 300 keys above)
    "1,133,1,3000,128 --causal"   # causal: 133 heads in 5 sections of 27, the last short
    "1,64,64,1400,128 --causal"   # causal: 64 heads of 64-row tiles in 2 sections of 32
    "1,140,260,65,64 --causal"    # causal, D = 64: 280 tiles of 192 rows from the counter (12 on)
    "1,100,300,300,64 --causal"   # the same with step 11's two warpgroups (few_tiles): 300 of 128 rows
)
gqa_shapes=(
    "1,4,129,257,128,1 --causal"  # multi-query: a backward block walks 4 heads; the last key tile none
    "1,8,200,130,64,2"            # groups of 4: each block walks 4 heads of 2 query tiles
)
det_shapes=(                      # with --backward --deterministic, in the steps that take it (13 on)
    "1,2,129,300,128"             # 2 query tiles of 80 rows, 3 key tiles: groups of 2 and 1
    "1,3,300,129,64"              # D = 64: 3 query tiles visited by 2 key tiles in turns
    "1,1,8200,300,128 --causal"   # causal from Nq = 8192: the 80-row causal tiles' turns
)
decode_shapes=(
    "1,8,1,1000,128,2"            # groups of 4, one query: 16 splits of one key tile, the last ragged
    "1,4,5,300,64,1"              # multi-query, 20 rows (2 x 2 warps), one split: O written directly
    "1,8,16,200,128,1"            # 128 rows: two row tiles of 64 (4 x 1 warps), one split
    "1,8,16,2000,128,1"           # the same with 32 splits of one key tile each
    "2,4,16,4097,64 --causal"     # causal: keys 0 .. 15 only, one tile, one split
    "1,16,3,3000,128,2"           # 24 rows, 47 splits of one key tile, the last ragged (56 keys)
)
mapfile -t all < <(build/attn list 2>/dev/null | awk '$1 ~ /^[0-9][0-9]_/ { print substr($1, 1, 2) }')
[ $# -gt 0 ] || set -- "${all[@]}"
status=0
for s in "$@"; do
    s=$(printf '%02d' "$((10#$s))")
    list=("${shapes[@]}") gqa=0
    [ "$((10#$s))" -ge 11 ] && list+=("${top_shapes[@]}")
    build/attn list | awk -v s="$s" '$1 ~ /^[0-9][0-9]_/ { cur = $1 ~ "^" s "_" } cur && $1 == "GQA:" { f = 1 }
                                     END { exit !f }' && list+=("${gqa_shapes[@]}") && gqa=1
    build/attn list | awk -v s="$s" '$1 ~ /^[0-9][0-9]_/ { cur = $1 ~ "^" s "_" } cur && $1 == "Nq:" { f = 1 }
                                     END { exit !f }' && list=("${decode_shapes[@]}")
    passes=("")
    build/attn list | awk -v s="$s" '$1 ~ "^" s "_" && /fwd\+bwd/ { f = 1 } END { exit !f }' &&
        passes=("" --backward)
    runs=()   # "PASS|SHAPE"
    for shape in "${list[@]}"; do
        for pass in "${passes[@]}"; do runs+=("$pass|$shape"); done
    done
    if [ "$((10#$s))" -ge 13 ] && [ ${#passes[@]} = 2 ]; then
        for shape in "${det_shapes[@]}"; do runs+=("--backward --deterministic|$shape"); done
        [ $gqa = 1 ] && runs+=("--backward --deterministic|1,8,200,300,128,2")   # groups of 4
    fi
    for tool in ${TOOLS:-memcheck racecheck synccheck}; do
        for run in "${runs[@]}"; do
            pass=${run%%|*} shape=${run#*|}
            # shellcheck disable=SC2086  # the shape and pass words split
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
exit $status
