#!/usr/bin/env bash
# The local metric must catch one wrong work tile that the whole-tensor rel-L2 lets through.
# A mutant of step 05 (tensor cores, sm_80+) scales the O of exactly one work tile (query block 3
# of head 5: 128 rows) by 1.3. At 4,8,4096,4096,128 bf16 non-causal that is one tile of 1024: the
# whole tensor moves by about 0.3 / sqrt(1024) ~ 0.9%, within its bound, while the tile's two
# blocks of 64 rows are 30% off. `attn run` must call the mutant wrong, name that block, and pass
# the unmutated step 05 on the same shape. The test prints both numbers. make test runs it.
# The mutant is built in a copy of this repository by its own Makefile (the flags every step gets:
# NVFLAGS_COMMON and ARCH), as tests/throwaway_steps.sh does; that needs nvcc, not a GPU. Without a
# GPU (build/attn info fails) it says so in one line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
shape=4,8,4096,4096,128
source tests/lib/repo_copy.sh
repo_copy mutant
mkdir -p steps/96_mutant_tile
src=steps/05_causal_skip/attention.cu mut=steps/96_mutant_tile/attention.cu
sed -e 's/"05_causal_skip"/"96_mutant_tile"/' \
    -e 's|^\( *const float inv = \)l > 0.f ? 1.f / l : 0.f;$|\1(l > 0.f ? 1.f / l : 0.f) * (blockIdx.x == 3 \&\& blockIdx.y == 5 ? 1.3f : 1.f); /* MUTANT */|' \
    "$src" >"$mut"
# the mutation must have happened, exactly once, with the new name: else step 05 changed under it
if [ "$(grep -c 'MUTANT' "$mut")" != 1 ] || ! grep -q '"96_mutant_tile"' "$mut" ||
    [ "$(diff "$src" "$mut" | grep -c '^>')" != 2 ]; then
    echo "tests/mutant_tile.sh: the sed mutation of $src did not apply (its epilogue line"
    echo "  'const float inv = l > 0.f ? 1.f / l : 0.f;' or its name changed): update the test"
    diff "$src" "$mut" || true
    exit 1
fi
make -s -j2 build/attn build/steps/00_materialized.so build/steps/05_causal_skip.so \
    build/steps/96_mutant_tile.so >make.log 2>&1 || { cat make.log; exit 1; }
export ATTN_STEPS_DIR=$tmp/build/steps
if ! build/attn info >info.txt 2>&1; then
    echo "tests/mutant_tile.sh skipped: no usable GPU ($(head -1 info.txt)); the mutant builds"
    exit 0
fi

# run STEP: attn run on the shape; sets out, rc, and from its check line whole, bound, block,
# block_bound and where (b, h, tile)
run() {
    rc=0
    out=$(build/attn run --step "$1" --shape $shape --dtype bf16 --reps 1 --seed 24 2>&1) || rc=$?
    local line
    line=$(grep '^check ' <<<"$out" || true)
    read -r whole bound <<<"$(sed -n 's/.* rel-L2 \([^ ]*\) (bound \([^)]*\)),.*/\1 \2/p' <<<"$line")"
    read -r b h tile block block_bound <<<"$(sed -n \
        's/.*worst block (b \([0-9]*\), h \([0-9]*\), tile \([0-9]*\)) \([^ ]*\) (bound \([^)]*\)).*/\1 \2 \3 \4 \5/p' \
        <<<"$line")"
    if [ -z "${whole:-}" ] || [ -z "${block_bound:-}" ]; then
        echo "tests/mutant_tile.sh: no check line with a whole-tensor and a block error from step $1:"
        echo "$out"
        exit 1
    fi
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }

run 05
if [ $rc -ne 0 ] || ! le "$block" "$block_bound"; then
    echo "tests/mutant_tile.sh: step 05 itself does not pass on $shape (exit $rc):"
    echo "$out"
    exit 1
fi
ok_whole=$whole ok_block=$block

run 96
fail=""
[ $rc -eq 1 ] && grep -q '^result     wrong' <<<"$out" || fail="attn run did not call the mutant wrong (exit $rc)"
le "$whole" "$bound" || fail="the whole-tensor rel-L2 alone already fails: the shape shows nothing"
le "$block" "$block_bound" && fail="the worst block is within its bound"
[ "$b $h" = "0 5" ] && { [ "$tile" = 6 ] || [ "$tile" = 7 ]; } ||
    fail="the worst block is (b $b, h $h, tile $tile), not the mutated tile's (b 0, h 5, tile 6 or 7)"
under=no
le "$whole" 1e-2 && under=yes
echo "mutant of step 05, O of one work tile of 1024 x 1.3, $shape bf16 against step 00 on the GPU:"
echo "  whole-tensor rel-L2 $whole (bound $bound, under 1e-2: $under): the old metric passes it"
echo "  worst block (b $b, h $h, tile $tile) rel-L2 $block (bound $block_bound): the local metric fails it"
echo "  unmutated step 05: whole $ok_whole, worst block $ok_block: passes"
if [ -n "$fail" ]; then
    echo "tests/mutant_tile.sh: FAILED: $fail"
    echo "$out"
    exit 1
fi
echo "tests/mutant_tile.sh: OK"
