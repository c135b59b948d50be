#!/usr/bin/env bash
# 13_sections, the change: bwd_heads_per_section plays the launch order (steps 13 and 14) instead
# of sizing sections by a formula. Launch by launch against the steps before it (build/var13p:
# old13.so, old14.so: the steps at 0c956b7, built with $NV as pack.sh did then) at the causal
# shapes; the GPU tests of the sections (new shapes that make several) and of the deterministic
# backward, with the builds as committed; and step 12's forward loop without its mask (nm, from
# run.sh build), which run.sh's first call did not copy.
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs): land.sh OUT (~3 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: land.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
mkdir -p /tmp/l13 /tmp/l14 /tmp/lnm
cp build/var13p/old13.so /tmp/l13/base.so && cp build/steps/13_backward_wgmma.so /tmp/l13/new.so
cp build/var13p/old14.so /tmp/l14/base.so && cp build/steps/14_gqa.so /tmp/l14/new.so
cp build/steps/12_three_warpgroups.so /tmp/lnm/base.so && cp build/var13s/nm.so /tmp/lnm/nm.so
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .git-sha; } >"$o/gpu.txt"
timeout -k 5 200 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,8,4096,4096,128,c --shape 4,8,4096,4096,64,c --shape 4,8,8192,8192,128,c \
    --shape 4,8,8192,8192,64,c --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64,c \
    --shape 8,16,4096,4096,128,c --shape 2,8,2048,2048,128,c \
    /tmp/l13/base.so /tmp/l13/new.so >"$o/ab_13.csv" 2>>"$o/ab.log"
echo "13 rc $?" >>"$o/ab.log"
timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,32,4096,4096,128,8,c --shape 4,8,8192,8192,128,c --shape 4,8,16384,16384,64,c \
    /tmp/l14/base.so /tmp/l14/new.so >"$o/ab_14.csv" 2>>"$o/ab.log"
echo "14 rc $?" >>"$o/ab.log"
timeout -k 5 100 build/v15/ab --rounds 5 --reps 10 \
    --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64 --shape 4,8,8192,8192,64 \
    /tmp/lnm/base.so /tmp/lnm/nm.so >"$o/ab_nomask.csv" 2>>"$o/ab.log"
echo "nomask rc $?" >>"$o/ab.log"
{ echo "step 13, the played sections over the formula's (time, lowest-highest over rounds)"
  ab_ratios "$o/ab_13.csv"
  echo "step 14, the same"
  ab_ratios "$o/ab_14.csv"
  echo "step 12's forward, not causal, D = 64: the loop without its mask over the step"
  ab_ratios "$o/ab_nomask.csv"; } | tee "$o/ab_ratios.txt"
{ timeout -k 5 250 build/tests/gpu --verbose --filter 'gpu/*sections*'; echo "[exit status $?]"
  timeout -k 5 200 build/tests/gpu --verbose --filter 'gpu/deterministic*'; echo "[exit status $?]"
} >"$o/gpu_tests.txt" 2>&1
grep -E 'Synthesis|exit status|FAIL' "$o/gpu_tests.txt"
