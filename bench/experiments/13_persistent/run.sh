#!/usr/bin/env bash
# 13_persistent: step 13's backward (the kernels without the deterministic option) on a persistent
# grid, its (key tile, head) units taken from a counter, as step 12's causal forward
# (../12_dyn_causal): each block of the one-block-per-unit grid loads K and V cold and writes dK
# and dV with the SM's tensor cores idle; a persistent block loads the next unit's K and V (and
# its first Q and dO) while it writes the last one's dK and dV. Predicted, from a start and an
# end of about 1.5-3 us against a unit's 135 us (D = 128, N = 4096, not causal): 1-2 % less time
# not causal at N = 4096, 2-4 % causal, under 1 % at 16384.
# Builds (made on the CPU machine, carried in build/var13): base.so (step 13 at HEAD), p0.so
# (the working tree with BWD_PERSIST=0: the refactor alone), persist.so (BWD_PERSIST=1).
#   run.sh OUT   (~2.5 min) build/v15/ab --backward on the eight bar shapes; attn run --backward
#                checks of persist.so as step 13 on shapes whose units outnumber the SMs;
#                memcheck and racecheck on two of them
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
# shellcheck disable=SC2086
timeout -k 5 100 build/v15/ab --backward --rounds 3 --reps 8 $BAR_SHAPES build/var13/base.so \
    build/var13/p0.so build/var13/persist.so >"$o/ab.csv" 2>"$o/ab.log"
echo "ab rc $?"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
d=$(steps_with 13_backward_wgmma=build/var13/persist.so)
quick_runs "$d" 13 --backward "1,140,130,140,128" "1,133,1,3000,128 --causal" "2,8,1000,777,64 --causal" \
    "1,1,16384,200,64" "1,140,260,65,64 --causal" "2,8,4096,4096,128" >"$o/checks.txt" 2>&1
grep -c "PASS" "$o/checks.txt"; grep -E "FAIL|rror" "$o/checks.txt" | head
cs=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
    for sh in "1,140,130,140,128" "1,140,260,65,64 --causal"; do
        # shellcheck disable=SC2086
        out=$(ATTN_STEPS_DIR=$d timeout 40 "$cs" --tool "$tool" --error-exitcode 99 build/attn run --step 13 \
              --backward --shape $sh --dtype bf16 --reps 1 2>&1)
        echo "$tool $sh: rc $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E -- '-> (PASS|FAIL)' <<<"$out" | tail -1)"
    done
done | tee "$o/sanitize.txt"
