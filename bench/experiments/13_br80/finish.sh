#!/usr/bin/env bash
# What run.sh land left undone, and what the landing changes elsewhere (on the H200, after
# run.sh land; carry build/steps, build/attn, build/tests, build/v15, .device-libs;
# LD_LIBRARY_PATH=$PWD/.device-libs; the Python door needs torch, which the H200 has):
#   finish.sh OUT   (~7 min)
#   1. bench/sanitize.sh 14 whole, one job per tool (run.sh land's two jobs ran out of their
#      330 s in step 14: sanitize_*.txt), and beside them the Python door's tests and the
#      training demo with the steps as committed (python.txt);
#   2. the deterministic backward against the default at D = 128, launch by launch: the default
#      now takes 80-row tiles there, the deterministic kernel keeps 64 (det.csv, summary.txt);
#   3. Nsight Compute on bwd_main at 4,8,4096,4096,128 and 4,8,4096,4096,64, not causal, the
#      metrics of ../13_fa4_profile/ncu.sh, beside FlashAttention-4's profile there (ncu.txt).
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: finish.sh OUT}
mkdir -p "$o"
. bench/experiments/tools/candidates.sh
for t in memcheck synccheck racecheck; do
    { TOOLS=$t timeout -k 5 330 bench/sanitize.sh 14; echo "[exit status $?]"; } >"$o/sanitize_$t.txt" 2>&1 &
done
python_door "$o/python.txt" &
wait
for t in memcheck synccheck racecheck; do
    echo "sanitize $t: $(grep -c 'rc 0;' "$o/sanitize_$t.txt") clean of $(grep -c '^step ' "$o/sanitize_$t.txt") runs, $(tail -n 1 "$o/sanitize_$t.txt")"
done | tee "$o/summary.txt"
grep -E "passed|mean loss|exit" "$o/python.txt" | tee -a "$o/summary.txt"
mkdir -p /tmp/det
cp build/steps/13_backward_wgmma.so /tmp/det/base.so
cp build/steps/13_backward_wgmma.so /tmp/det/det.so
timeout -k 5 150 build/v15/ab --backward --rounds 3 --reps 10 --shape 4,8,4096,4096,128 \
    --shape 4,8,16384,16384,128 /tmp/det/base.so /tmp/det/det.so:det >"$o/det.csv" 2>"$o/det.log"
echo "det ab rc $?" | tee -a "$o/summary.txt"
ab_ratios "$o/det.csv" | tee -a "$o/summary.txt"
M=sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,sm__warps_active.avg.pct_of_peak_sustained_active
for sh in 4,8,4096,4096,128 4,8,4096,4096,64; do
    echo "=== step 13 backward $sh"
    timeout 120 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats \
        --metrics $M -k regex:bwd_main --launch-skip 1 --launch-count 1 \
        build/v15/ab --backward --rounds 1 --reps 1 --shape $sh build/steps/13_backward_wgmma.so 2>&1 | grep -v "==PROF=="
done >"$o/ncu.txt" 2>&1
grep -E "^===|Duration|Elapsed Cycles|sm__pipe_shared" "$o/ncu.txt" | tee -a "$o/summary.txt"
