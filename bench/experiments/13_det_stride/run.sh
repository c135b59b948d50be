#!/usr/bin/env bash
# Not yet run. The deterministic backward's shifted walk with its blocks S = n_qt / G query tiles
# apart instead of one (stride13.patch, stride14.patch: bwd_block's starting tile and det2_turn's
# rank; README.md says why), against the step as committed, deterministic and not.
# Builds (tools/pack.sh): build/var_det/{base,det,stride}.so from step 13 (det.so the same file
# as base.so, named apart for ab_ratios), stride14.so from step 14.
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, tar xJf .carry/b.txz first):
#   run.sh OUT        ~2 min: launch by launch, each build's time over the default's, and the
#                     check lines of both deterministic builds on two shapes
#   run.sh OUT suite  ~6 min: to land it, the whole GPU suite (its deterministic tests: bitwise
#                     repeatable over runs and two streams) beside bench/sanitize.sh 13 14
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [suite]}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var_det
if [ "${2:-}" = suite ]; then
    d=$(steps_with 13_backward_wgmma=$v/stride.so 14_gqa=$v/stride14.so)
    suite "$d" "$o" 13 14
    suite_summary "$o"
    exit 0
fi
timeout -k 5 300 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
    --shape 4,8,4096,4096,128 --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64 \
    --shape 4,8,8192,8192,128,c $v/base.so $v/det.so:det $v/stride.so:det >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
d=$(steps_with 13_backward_wgmma=$v/stride.so)
for sh in "2,4,1000,1000,128" "1,8,4096,4096,64"; do
    for dir in build/steps "$d"; do
        echo "## $dir $sh"
        ATTN_STEPS_DIR=$dir timeout -k 5 60 build/attn run --step 13 --backward --deterministic \
            --shape "$sh" --reps 1 2>&1 | grep -E '^check|FAIL|rror'
    done
done >"$o/checks.txt" 2>&1
cat "$o/checks.txt"
