#!/usr/bin/env bash
# Three reorderings of step 13's backward around its two hand-overs to the async proxy, each a
# compile-time switch of writer.patch (build/var13/NAME.so), timed launch by launch against the
# step as committed (base.so) at the eight bar shapes:
#   w    the dQ writer warp of the deterministic kernel (warp 1 of the producer) adds the
#        staging for the default kernel too, so a warpgroup arrives and goes on where it waited
#        on its own barrier and issued the add itself (VAR_WRITER; dQ by rows and columns, not
#        by keys)
#   lf   dK's wgmma waited for before dQ staging's fence, so the fence finds the stores landed
#        (VAR_LATE_FENCE)
#   de   dS^T stored before dV's wgmma is issued and fenced after it (VAR_DS_EARLY=1: D = 128;
#        de2: both head dims, where D = 64 spills 12 bytes)
#   wlf  w and lf; all: w, lf and de
# Before the call, here: make; build/var13/base.so is step 13 as committed, the rest
#   $NV -DVAR_...=1 steps/13_backward_wgmma/attention.cu -o build/var13/NAME.so (candidates.sh's NV)
# with writer.patch applied; build/v15/ab (build_ab).
#   run.sh OUT   (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~4 min)
# Also: the lse case that failed the GPU suite's large grid before the lse floor (steps 00 and 02,
# 1,2,1,1,64 fp32), its seed and five more.
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
{
    for seed in 13215222934038373703 1 2 3 4 5; do
        for st in 0 2; do
            echo "## step $st seed $seed"
            timeout 60 build/attn run --step $st --shape 1,2,1,1,64 --dtype fp32 --inputs large \
                --seed $seed --reps 1 2>&1 | grep -E '^check|rel|FAIL|PASS'
        done
    done
} >"$o/lse_repro.txt" 2>&1
V="w lf de de2 wlf all"
for v in $V; do
    d=$(steps_with 13_backward_wgmma=build/var13/$v.so)
    quick_runs "$d" 13 "--backward --inputs far" 4,8,1000,1000,128 "2,8,4096,4096,128 --causal" \
        1,4,1000,777,64 "2,8,2048,2048,64 --causal" 2,4,16384,16384,64 >"$o/check_$v.txt" 2>&1
    quick_runs "$d" 13 "--backward --deterministic" 2,8,4096,4096,128 "2,8,2048,2048,64 --causal" \
        >>"$o/check_$v.txt" 2>&1
done
vs=""
for v in $V; do vs="$vs build/var13/$v.so"; done
# shellcheck disable=SC2086
timeout -k 5 240 build/v15/ab --backward --rounds 4 --reps 8 $BAR_SHAPES build/var13/base.so $vs \
    >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
grep -c PASS "$o"/check_*.txt
grep -L FAIL "$o"/check_*.txt
