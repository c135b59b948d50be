#!/usr/bin/env bash
# What the mask bias's landing had not run, after ../12_d64_profile/run.sh 2 has
# installed FlashAttention-4 on the same machine: the deterministic backward's price over the
# default (step 13, launch by launch, as ../13_causal_wide/land.sh measured it before the bias:
# 1.11-1.14x at D = 128, N = 16384), then Nsight Compute on the causal backward at D = 128,
# N = 16384 beside FlashAttention-4's (../13_causal_wide/profile.sh OUT fa4).
#   usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs; ~4 min): rest.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: rest.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
mkdir -p /tmp/d13 && cp build/steps/13_*.so /tmp/d13/base.so && cp build/steps/13_*.so /tmp/d13/det.so
timeout -k 5 150 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,8192,8192,128,c \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,128 /tmp/d13/base.so /tmp/d13/det.so:det \
    >"$o/ab_det.csv" 2>>"$o/ab.log"
echo "step 13 deterministic over default"; ab_ratios "$o/ab_det.csv" | tee "$o/det_ratios.txt"
bash bench/experiments/13_causal_wide/profile.sh "$o/profile" fa4
