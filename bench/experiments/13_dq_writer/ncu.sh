#!/usr/bin/env bash
# Run 2026-12-02 on step 13 with DS_EARLY (ncu_run/: summary.txt, stalls_*.txt): Nsight Compute (clocks not locked) on step 13's backward with the dQ writer and on
# FlashAttention-4's, at the five bar shapes where step 13 is behind it (bars.csv at 3c92f7d:
# 0.936-0.996x), with ../13_fa4_profile/ncu.sh's sections and metrics, and the warp samples by SASS
# line of step 13's kernel at the worst two (as ../13_bwd_stalls/run.sh takes them: stalls_*.txt).
# usage (on the H200, from the repository root, FlashAttention-4 installed, build/v15/ab built):
#   bash bench/experiments/13_dq_writer/ncu.sh OUT      (~6 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: ncu.sh OUT}; mkdir -p "$o"
M=sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,sm__warps_active.avg.pct_of_peak_sustained_active
N="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --metrics $M"
for sh in 4,8,4096,4096,64 4,8,4096,4096,64,c 4,8,4096,4096,128 4,8,4096,4096,128,c 4,8,16384,16384,128,c; do
    peer=${sh%,c}; causal=""; [ "$peer" != "$sh" ] && causal=causal
    {
        echo "=== step 13 backward $sh"
        # shellcheck disable=SC2086
        timeout 120 $N -k regex:bwd_main --launch-skip 1 --launch-count 1 \
            build/v15/ab --backward --rounds 1 --reps 1 --shape $sh build/steps/13_backward_wgmma.so 2>&1 |
            grep -v "==PROF=="
        echo "=== fa4 backward $sh"
        # shellcheck disable=SC2086
        timeout 150 $N --profile-from-start off \
            python3 bench/experiments/tools/ncu_peer.py fa4 bwd "$peer" $causal 2>&1 | grep -v "==PROF=="
    } >>"$o/ncu_bwd.txt"
done
w=$(mktemp -d)
for sh in 4,8,4096,4096,64 4,8,16384,16384,128,c; do   # as ../13_bwd_stalls/run.sh takes them
    n=${sh//,/_}
    # shellcheck disable=SC2086
    timeout -k 5 200 ncu --clock-control none --set full --import-source yes -k regex:bwd_main \
        --launch-skip 1 -c 1 -o "$w/$n" build/v15/ab --backward --rounds 1 --reps 1 --shape $sh \
        build/steps/13_backward_wgmma.so >"$o/ncu_$n.log" 2>&1
    timeout 100 ncu -i "$w/$n.ncu-rep" --page source --csv --print-source sass 2>>"$o/ncu_$n.log" |
        gzip >"$o/source_$n.csv.gz"
    python3 bench/experiments/12_fwd_timeline/stalls.py "$o/source_$n.csv.gz" 30 >"$o/stalls_$n.txt" 2>&1
done
