#!/usr/bin/env bash
# When the dQ writer hands its stagings back (README.md says why). early (early13.patch) has run
# (run_h100/); now order (order13.patch: the deterministic writer's old order with the early
# counter read and the group's launch order) and both (both13.patch, both14.patch: the default
# kernel's two adds before either read wait), against step 13 as committed.
# Builds (tools/pack.sh): build/var_dqh/{base,det}.so (step 13 as committed), order.so,
# both.so and both14.so (steps 13 and 14 patched).
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, tar xJf .carry/b.txz first):
#   run.sh OUT        ~3 min: launch by launch, 3 rounds, each build's time over the default's at
#                     D = 128 and 64, N = 4096 and 16384, and causal at 16384 (the two ties with FA4); then the
#                     deterministic check lines of order (step 13, five shapes)
#   run.sh OUT suite  ~8 min: to land both, the whole GPU suite and bench/sanitize.sh 13 14
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [suite]}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var_dqh
if [ "${2:-}" = suite ]; then
    d=$(steps_with 13_backward_wgmma=$v/both.so 14_gqa=$v/both14.so)
    suite "$d" "$o" 13 14
    suite_summary "$o"
    exit 0
fi
timeout -k 5 200 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64 --shape 4,8,16384,16384,64,c \
    --shape 4,8,4096,4096,128 \
    --shape 4,8,4096,4096,64 $v/base.so $v/det.so:det $v/order.so:det $v/both.so \
    >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
d=$(steps_with 13_backward_wgmma=$v/order.so)
for sh in "2,4,1000,1000,128" "1,8,4096,4096,64" "1,4,3000,2900,128" "1,4,2000,1900,128 --causal" \
    "1,2,8200,8192,128 --causal"; do
    echo "## order step 13 $sh"
    # shellcheck disable=SC2086  # the shape, and --causal after it
    ATTN_STEPS_DIR=$d timeout -k 5 60 build/attn run --step 13 --backward --deterministic \
        --shape $sh --reps 1 2>&1 | grep -E '^check|FAIL|rror'
done >"$o/checks.txt" 2>&1
grep -c PASS "$o/checks.txt"; grep -v -e PASS -e '^##' -e 'worst dQ' "$o/checks.txt" | head
