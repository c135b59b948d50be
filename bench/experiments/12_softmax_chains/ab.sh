#!/usr/bin/env bash
# Step 12's softmax chains, launch by launch: base (the step before, at 9ad80c3), sm (the row max
# and row sum started from the tile's own values: chains.patch, the step since) and smun (sm with
# the consumer's key-tile counter unsigned, so that % and / by STAGES are a mask and a shift), at
# the eight bar shapes, 3 rounds of 10. Here: build/v12/{base,sm,smun}.so (the step's flags, make
# step-flags STEP=12, -Isteps/12_three_warpgroups); on the H200, carrying build/v12,
# build/v15/ab, .device-libs:
#   bash bench/experiments/12_softmax_chains/ab.sh > ab.csv
set -u
sh8=""
for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
# shellcheck disable=SC2086
timeout 300 build/v15/ab --rounds 3 --reps 10 $sh8 build/v12/base.so build/v12/sm.so build/v12/smun.so
