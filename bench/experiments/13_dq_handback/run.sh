#!/usr/bin/env bash
# The deterministic dQ writer's stagings handed back once read (early13.patch, early14.patch;
# README.md says why), against the writer as committed and the writer before 13_det_writer landed.
# Builds (tools/pack.sh): build/var_dqh/{base,det}.so (step 13 as committed), before.so (step 13
# at 44989c7, before the writer landed), early.so and early14.so (steps 13 and 14 patched).
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, tar xJf .carry/b.txz first):
#   run.sh OUT        ~4 min: launch by launch, 3 rounds, each build's time over the default's at
#                     D = 128 and 64, N = 4096 and 16384, and causal D = 128 at 16384; then the
#                     deterministic check lines of det and early (steps 13 and 14, five shapes)
#                     and early's bitwise-repeatable test
#   run.sh OUT suite  ~6 min: to land early, the whole GPU suite and bench/sanitize.sh 13 14
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [suite]}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var_dqh
if [ "${2:-}" = suite ]; then
    d=$(steps_with 13_backward_wgmma=$v/early.so 14_gqa=$v/early14.so)
    suite "$d" "$o" 13 14
    suite_summary "$o"
    exit 0
fi
timeout -k 5 200 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,128 \
    --shape 4,8,4096,4096,64 $v/base.so $v/before.so:det $v/det.so:det $v/early.so:det \
    >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
for b in det early; do
    if [ $b = det ]; then d=build/steps; else d=$(steps_with 13_backward_wgmma=$v/early.so 14_gqa=$v/early14.so); fi
    for sh in "2,4,1000,1000,128" "1,8,4096,4096,64" "1,4,3000,2900,128" "2,8,1000,1000,128,2" \
        "1,4,2000,1900,128 --causal"; do
        for st in 13 14; do
            case $sh in *,2) [ $st = 13 ] && continue;; esac
            echo "## $b step $st $sh"
            # shellcheck disable=SC2086  # the shape, and --causal after it
            ATTN_STEPS_DIR=$d timeout -k 5 60 build/attn run --step $st --backward \
                --deterministic --shape $sh --reps 1 2>&1 | grep -E '^check|FAIL|rror'
        done
    done
done >"$o/checks.txt" 2>&1
grep -c PASS "$o/checks.txt"; grep -v -e PASS -e '^##' "$o/checks.txt" | grep -v 'worst dQ' | head
d=$(steps_with 13_backward_wgmma=$v/early.so 14_gqa=$v/early14.so)
{ ATTN_STEPS_DIR=$d timeout -k 5 100 build/tests/gpu --verbose \
      --filter 'gpu/deterministic_backward_is_repeatable' 2>&1; echo "[exit status $?]"; } >"$o/rep_early.txt"
grep -h -E 'Synthesis|exit status' "$o/rep_early.txt"
