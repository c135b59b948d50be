#!/usr/bin/env bash
# Run 2026-12-02 (next_run/; landed at D = 64 as DS_EARLY): the lead note 13 left, dS^T stored before dV's product is issued (ds_early.patch),
# measured before the writer at 2.6-3.1 % less time at D = 64, N = 4096 not causal (variants_run,
# de2), on the step with the writer. Builds, here (make first; ../tools/candidates.sh's NV):
#   cp build/steps/13_backward_wgmma.so build/var13/base.so
#   git apply bench/experiments/13_dq_writer/ds_early.patch
#   $NV steps/13_backward_wgmma/attention.cu -o build/var13/dse.so       (D = 64 only)
#   $NV -DDS_EARLY_ALL=1 steps/13_backward_wgmma/attention.cu -o build/var13/dsa.so   (both)
#   git checkout steps/13_backward_wgmma/attention.cu; build_ab
#   next.sh OUT   (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~3 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: next.sh OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
for v in dse dsa; do
    d=$(steps_with 13_backward_wgmma=build/var13/$v.so)
    quick_runs "$d" 13 "--backward --inputs far" 4,8,1000,1000,128 "2,8,4096,4096,128 --causal" \
        1,4,1000,777,64 "2,8,2048,2048,64 --causal" 2,4,16384,16384,64 >"$o/check_$v.txt" 2>&1
    quick_runs "$d" 13 "--backward --deterministic" 2,8,4096,4096,128 "2,8,2048,2048,64 --causal" \
        >>"$o/check_$v.txt" 2>&1
done
# shellcheck disable=SC2086
timeout -k 5 200 build/v15/ab --backward --rounds 4 --reps 8 $BAR_SHAPES --shape 4,8,8192,8192,64 \
    --shape 4,8,2048,2048,64 build/var13/base.so build/var13/dse.so build/var13/dsa.so \
    >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
