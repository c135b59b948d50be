#!/usr/bin/env bash
# Step 13 as committed after fin13 landed: its deterministic backward against its default, launch by
# launch at the eight bar shapes (3 rounds of 10), and Nsight Compute on bwd_main<64> at
# 4,8,4096,4096,64 with the sections of fin_run/ncu_mb64.txt (the kernel before dQ by rows).
# On the H200 (carry build/steps, build/v15, .device-libs; LD_LIBRARY_PATH=$PWD/.device-libs):
#   bench/experiments/13_bwd_descriptors/det_ncu.sh OUT    OUT gets ab_det.csv, ratios.txt, ncu64.txt
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
o=${1:?usage: det_ncu.sh OUT}
mkdir -p "$o" /tmp/dn
cp build/steps/13_backward_wgmma.so /tmp/dn/base.so   # ab_ratios divides by base.so's times
cp build/steps/13_backward_wgmma.so /tmp/dn/det.so    # the same build, run deterministic (:det)
# shellcheck disable=SC2086
timeout -k 5 150 build/v15/ab --backward --rounds 3 --reps 10 $BAR_SHAPES /tmp/dn/base.so /tmp/dn/det.so:det \
    >"$o/ab_det.csv" 2>"$o/ab_det.log"
{ echo "the deterministic backward's time over the default's (ab_det.csv: 3 rounds; min-max)"; ab_ratios "$o/ab_det.csv"; } \
    >"$o/ratios.txt"
cat "$o/ratios.txt"
timeout -k 5 120 ncu --clock-control none --section SpeedOfLight --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
    -k regex:bwd_main --launch-skip 2 --launch-count 1 \
    build/v15/ab --backward --rounds 1 --reps 3 --shape 4,8,4096,4096,64 /tmp/dn/base.so >"$o/ncu64.txt" 2>&1
grep -E "Duration|L2 Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Achieved Active Warps" "$o/ncu64.txt"
