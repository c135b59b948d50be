#!/usr/bin/env bash
# The far inputs must find a padded key that leaks into the backward. A mutant of step 13 (the
# Hopper backward) drops the mask of the keys past Nk in its last key tile, as the step did before
# it was fixed: TMA fills those keys with zeros, so S = 0 there, and on a row whose scores all sit
# far below zero P = 2^(0 - lse2) overflows and dQ becomes NaN. `attn run --inputs far --backward`
# must call the mutant wrong where Nk is not a multiple of the key tile (128) and pass it where it
# is, pass it on the same ragged shape with normal inputs (which cannot see the leak), and pass the
# unmutated step 13 on every shape. The test prints each verdict. make test runs it.
# The mutant is built in a copy of this repository by its own Makefile, as tests/mutant_tile.sh
# does; that needs nvcc, not a GPU. Without a Hopper GPU it says so in one line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/repo_copy.sh
repo_copy mutant-far
mkdir -p steps/97_mutant_far
src=steps/13_backward_wgmma/attention.cu mut=steps/97_mutant_far/attention.cu
sed -e 's/"13_backward_wgmma"/"97_mutant_far"/' \
    -e 's/^\( *const int mask_below = \)kw0 + 64 > Nk ? INT_MAX : \(causal ? kw0 + 63 : INT_MIN;\)$/\1\2 \/* MUTANT *\//' \
    -e 's/^\( *const int key\[2\] = {kw0 + 16 \* warp + g\) + (kw0 + 16 \* warp + g >= Nk ? PAST : 0),$/\1, \/* MUTANT *\//' \
    -e 's/^\( *kw0 + 16 \* warp + g + 8\) + (kw0 + 16 \* warp + g + 8 >= Nk ? PAST : 0)};$/\1}; \/* MUTANT *\//' \
    "$src" >"$mut"
echo "97_mutant_far_ARCH := -gencode arch=compute_90a,code=sm_90a" >steps/97_mutant_far/step.mk
# the mutation must have happened on exactly the three lines, with the new name: else step 13
# changed under it
if [ "$(grep -c 'MUTANT' "$mut")" != 3 ] || ! grep -q '"97_mutant_far"' "$mut" ||
    [ "$(diff "$src" "$mut" | grep -c '^>')" != 4 ]; then
    echo "tests/mutant_far.sh: the sed mutation of $src did not apply (its padded-key mask lines"
    echo "  'const int key[2] = {... >= Nk ? PAST : 0),', '... + 8 >= Nk ? PAST : 0)};' and"
    echo "  'const int mask_below = kw0 + 64 > Nk ? ...' or its name changed): update the test"
    diff "$src" "$mut" || true
    exit 1
fi
make -s -j2 build/attn build/steps/00_materialized.so build/steps/13_backward_wgmma.so \
    build/steps/97_mutant_far.so >make.log 2>&1 || { cat make.log; exit 1; }
export ATTN_STEPS_DIR=$tmp/build/steps
if ! build/attn info >info.txt 2>&1 || ! grep -q '^compute_capability=9\.0' info.txt; then
    echo "tests/mutant_far.sh skipped: no Hopper GPU ($(head -1 info.txt)); the mutant builds"
    exit 0
fi

# verdict STEP SHAPE INPUTS [--causal]: "right" or "wrong" from attn run's exit status (1: a
# check failed), its check lines on stderr
verdict() {
    local out rc=0
    out=$(build/attn run --step "$1" --shape "$2" --inputs "$3" ${4:-} --backward --reps 1 \
          --seed 31 2>&1) || rc=$?
    if [ $rc -eq 1 ]; then
        echo wrong
    elif [ $rc -eq 0 ]; then
        echo right
    else
        echo "tests/mutant_far.sh: attn run --step $1 --shape $2 --inputs $3 ${4:-} failed (exit $rc):" >&2
        echo "$out" >&2
        exit 1
    fi
    grep '^check ' <<<"$out" | sed 's/^/    /' >&2
}
fail=""
expect() {   # expect WANT STEP SHAPE INPUTS [--causal]
    local got
    got=$(verdict "$2" "$3" "$4" "${5:-}")
    printf '  step %s %-20s %-9s %-6s: %s (expected %s)\n' "$2" "$3" "${5:-}" "$4" "$got" "$1"
    [ "$got" = "$1" ] || fail="$fail step $2 $3 $4 ${5:-}: $got;"
}
echo "step 13 and its mutant without the padded-key mask (97), backward, far and normal inputs:"
for shape in 1,1,100,100,64 1,1,100,100,128 1,2,129,200,64; do
    expect wrong 97 $shape far
    expect right 13 $shape far
done
expect wrong 97 2,3,300,257,128 far --causal
expect right 13 2,3,300,257,128 far --causal
expect right 97 1,1,100,128,64 far          # Nk a multiple of the key tile: nothing to leak
expect right 97 1,1,100,100,64 normal       # the leak weighs exp(0 - lse), small on normal rows
if [ -n "$fail" ]; then
    echo "tests/mutant_far.sh: FAILED:$fail"
    exit 1
fi
echo "tests/mutant_far.sh: OK"
