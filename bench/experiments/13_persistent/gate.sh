#!/usr/bin/env bash
# The persistent backward kept where land64.sh measured it paying: D = 64, dQ by rows, not
# deterministic, not causal, and at most 16 waves of work (K/V units times the heads each walks);
# elsewhere the same kernel runs one unit a block (g13.so, g14.so; build/steps holds them). Then the
# far-input case that failed in land64's GPU suite, on the step before and after, and the GPU suite
# and sanitizers of steps 13 and 14 on the gated build.
#   gate.sh OUT   (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; the builds as land64.sh says,
#                  with g13.so and g14.so the steps after this gate)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: gate.sh OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
s13=""
for n in 1024 2048 4096 8192; do s13="$s13 --shape 4,8,$n,$n,64 --shape 4,8,$n,$n,64,c"; done
s13="$s13 --shape 4,16,4096,4096,64 --shape 4,16,8192,8192,64 --shape 4,8,4096,4096,128"
mkdir -p /tmp/g13 /tmp/g14
cp build/var13/base13.so /tmp/g13/base.so
cp build/var13/base14.so /tmp/g14/base.so
# shellcheck disable=SC2086
timeout -k 5 150 build/v15/ab --backward --rounds 5 --reps 8 $s13 /tmp/g13/base.so \
    build/var13/p13.so build/var13/g13.so >"$o/ab13.csv" 2>"$o/ab13.log"
timeout -k 5 150 build/v15/ab --backward --rounds 5 --reps 8 --shape 4,32,4096,4096,64 \
    --shape 4,32,4096,4096,64,8 --shape 4,8,4096,4096,64 --shape 4,8,4096,4096,64,2 \
    --shape 4,8,4096,4096,64,c /tmp/g14/base.so build/var13/p14.so build/var13/g14.so \
    >"$o/ab14.csv" 2>"$o/ab14.log"
{ echo "step 13:"; ab_ratios "$o/ab13.csv"; echo "step 14:"; ab_ratios "$o/ab14.csv"; } | tee "$o/ab_ratios.txt"
before=$(steps_with 13_backward_wgmma=build/var13/base13.so 14_gqa=build/var13/base14.so)
{
    for seed in 5335231699872788336 1 2 3 4 5; do
        for d in "$before" build/steps; do
            for st in 14_gqa:1,16,2,65537,64,2 13_backward_wgmma:1,16,2,65537,64; do
                echo "## $([ "$d" = build/steps ] && echo after || echo before) ${st%%:*} seed $seed"
                ATTN_STEPS_DIR=$d timeout 60 build/attn run --step "${st%%:*}" --shape "${st#*:}" \
                    --dtype bf16 --inputs far --seed $seed --backward --reps 1 2>&1 | grep -E '^check|rel|FAIL|PASS'
            done
        done
    done
} >"$o/far_repro.txt" 2>&1
suite build/steps "$o" 13 14
suite_summary "$o" | tee "$o/summary.txt"
