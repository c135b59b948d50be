#!/usr/bin/env bash
# Every pair of lse2 read before the wait for S^T at D = 128 (LSE2_EARLY = 8; it was 2), in steps
# 13 and 14: Nsight Compute had one late pair's load (LDS.64, the FFMA that waits for it) holding
# 8 % of the warp samples at D = 128, N = 16384, causal (../13_dq_writer/ncu_run/). All eight
# pairs spilled once; with the dQ writer they fit (ptxas: no spills). One call, ~4 min:
#   - launch by launch at D = 128 against the step before (base: build/var13/dse.so, step 13 at
#     f71b019; ne4: four pairs early, built from that step with -DNE=4 by hand; ne8: the working
#     tree's step 13), and step 14 against its build before (base14.so);
#   - the grids of the GPU suite on steps 00, 13 and 14 alone (ATTN_STEPS_DIR: a folder of the
#     three), the deterministic and causal-sections tests, and bench/sanitize.sh 13 14 under
#     memcheck beside them, cut at 170 s.
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs, build/steps = the working tree):
#   bash bench/experiments/13_lse2_early/run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var13
cp $v/dse.so $v/base.so && cp build/steps/13_backward_wgmma.so $v/ne8.so
timeout -k 5 120 build/v15/ab --backward --rounds 4 --reps 8 --shape 4,8,4096,4096,128 \
    --shape 4,8,4096,4096,128,c --shape 4,8,16384,16384,128 --shape 4,8,16384,16384,128,c \
    --shape 4,8,8192,8192,128,c $v/base.so $v/ne4.so $v/ne8.so >"$o/ab13.csv" 2>"$o/ab13.log"
ab_ratios "$o/ab13.csv" | tee "$o/ab_ratios.txt"
mkdir -p /tmp/w14 && cp $v/base14.so /tmp/w14/base.so && cp build/steps/14_gqa.so /tmp/w14/ne8_14.so
timeout -k 5 60 build/v15/ab --backward --rounds 4 --reps 8 --shape 4,32,4096,4096,128,8 \
    --shape 4,32,4096,4096,128,8,c --shape 4,32,16384,16384,128,8,c /tmp/w14/base.so \
    /tmp/w14/ne8_14.so >"$o/ab14.csv" 2>"$o/ab14.log"
ab_ratios "$o/ab14.csv" | tee -a "$o/ab_ratios.txt"
d=$(mktemp -d)
for s in 00_materialized 13_backward_wgmma 14_gqa; do ln -s "$PWD/build/steps/$s.so" "$d/"; done
{ ATTN_STEPS_DIR=$d timeout -k 5 170 build/tests/gpu --verbose --filter 'gpu/grid_*'
  echo "[exit status $?]"; } >"$o/grids.txt" 2>&1 &
{ timeout -k 5 170 build/tests/gpu --verbose --filter 'gpu/{deterministic*,step1[34]*}'
  echo "[exit status $?]"; } >"$o/tests.txt" 2>&1 &
{ TOOLS=memcheck timeout -k 5 170 bench/sanitize.sh 13 14; echo "[exit status $?]"; } \
    >"$o/sanitize_memcheck.txt" 2>&1 &
wait
grep -hE "Synthesis|FAIL|exit status" "$o/grids.txt" "$o/tests.txt"
echo "memcheck: $(grep -c 'rc 0;' "$o/sanitize_memcheck.txt") clean of $(grep -c '^step ' "$o/sanitize_memcheck.txt") runs"
grep '^step ' "$o/sanitize_memcheck.txt" | grep -v 'rc 0;'

