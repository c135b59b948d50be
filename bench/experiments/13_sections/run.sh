#!/usr/bin/env bash
# 13_sections: the causal backward's heads per section (bwd_heads_per_section) forced to 1, 2, 4,
# 6 and 32 (every head in one section) against the step's choice (3 at N = 16384, 11 at 4096),
# launch by launch, at the causal bar shapes and N = 8192; and, in the same call, step 12's K/V
# ring 3 and 4 deep at D = 64 against its 2 (stages.patch). Only timing: the sections change
# the order blocks start in, not what a block computes (the GPU suite's causal-sections test
# checks that order's results), and the ring's depth is the step's template parameter; and step 12
# with its loop compiled without the mask (nm), timed where nothing is masked.
# Builds, here (after make): bash bench/experiments/13_sections/run.sh build
# There: LD_LIBRARY_PATH=$PWD/.device-libs bash bench/experiments/13_sections/run.sh OUT (~2 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
E=bench/experiments
if [ "${1:-}" = build ]; then
    mkdir -p build/var13s
    git apply $E/13_sections/hps.patch $E/13_sections/stages.patch || exit 1
    for h in 1 2 4 6 32; do
        # shellcheck disable=SC2086
        $NV -DBWD_HPS=$h steps/13_backward_wgmma/attention.cu -o build/var13s/h$h.so || break
    done
    for s in 3 4; do
        # shellcheck disable=SC2086
        $NV -DFWD_STAGES=$s steps/12_three_warpgroups/attention.cu -o build/var13s/s$s.so || break
    done
    git checkout steps/13_backward_wgmma steps/12_three_warpgroups
    # nm: step 12 with needs_mask() false always, the forward's loop compiled without its mask:
    # what it costs where nothing is masked (timed only there: not causal, Nk % 128 = 0, D = 64)
    sed -i 's/            return k0 + Bc > Nk || (causal \&\& k0 + Bc - 1 > wg_row0);/            return false;/' \
        steps/12_three_warpgroups/attention.cu
    git diff --quiet steps/12_three_warpgroups && exit 1
    # shellcheck disable=SC2086
    $NV steps/12_three_warpgroups/attention.cu -o build/var13s/nm.so
    git checkout steps/12_three_warpgroups
    exit 0
fi
o=${1:?usage: run.sh OUT | run.sh build}; mkdir -p "$o" && o=$(cd "$o" && pwd)
d=build/var13s
mkdir -p /tmp/sec /tmp/stg
cp build/steps/13_backward_wgmma.so /tmp/sec/base.so
cp $d/h*.so /tmp/sec/
cp build/steps/12_three_warpgroups.so /tmp/stg/base.so
cp $d/s*.so /tmp/stg/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$o/gpu.txt"
cat .git-sha >>"$o/gpu.txt"
timeout -k 5 240 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64,c --shape 4,8,8192,8192,128,c \
    --shape 4,8,4096,4096,128,c --shape 4,8,4096,4096,64,c \
    /tmp/sec/base.so /tmp/sec/h1.so /tmp/sec/h2.so /tmp/sec/h4.so /tmp/sec/h6.so /tmp/sec/h32.so \
    >"$o/ab_sections.csv" 2>>"$o/ab.log"
echo "sections rc $?" >>"$o/ab.log"
timeout -k 5 120 build/v15/ab --rounds 5 --reps 10 \
    --shape 4,8,16384,16384,64 --shape 4,8,16384,16384,64,c --shape 4,8,4096,4096,64 \
    --shape 4,8,4096,4096,64,c /tmp/stg/base.so /tmp/stg/s3.so /tmp/stg/s4.so \
    >"$o/ab_stages.csv" 2>>"$o/ab.log"
echo "stages rc $?" >>"$o/ab.log"
timeout -k 5 100 build/v15/ab --rounds 5 --reps 10 \
    --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64 --shape 4,8,8192,8192,64 \
    /tmp/stg/base.so /tmp/stg/nm.so >"$o/ab_nomask.csv" 2>>"$o/ab.log"
echo "nomask rc $?" >>"$o/ab.log"
{ echo "backward, heads per section forced, time over the step's (lowest-highest over rounds)"
  ab_ratios "$o/ab_sections.csv"
  echo "forward, K/V ring depth at D = 64, time over 2 stages"
  ab_ratios "$o/ab_stages.csv"
  echo "forward, not causal, D = 64: the loop without its mask over the step"
  ab_ratios "$o/ab_nomask.csv"; } | tee "$o/ab_ratios.txt"
