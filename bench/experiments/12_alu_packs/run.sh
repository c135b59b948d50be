#!/usr/bin/env bash
# Is step 12's D = 64 forward bound by the XU pipe (MUFU.EX2 and, if it runs there, the F2FP that
# packs P to bf16)? Per thread and 128-key trip the loop has 66 MUFU and 32 F2FP; at 16 a clock
# per SM both together need ~2,350 of the ~2,630 cycles a trip takes at FlashAttention-4's
# speed (89 %), MUFU alone 1,584. alu_packs.patch packs P with two integer adds (round half up)
# and a byte permute instead (PRMT, no conversion) for every pack (pack1), every second (pack2)
# or fourth (pack4). The same patch's EMU_EXP computes the exponentials of every fourth (emu4) or
# eighth (emu8) column group by a cubic on the FMA pipe (FlashAttention-4's sm100 trick; 8
# instructions for one MUFU), and pack1emu8 both. ring.patch (not the packs): the ring's stage and phase carried from trip to
# trip, not recomputed from the count (7 uniform instructions fewer a trip).
# Builds, here (make first; NV as candidates.sh sets it), as 46c124d's ../tools/pack.sh made them:
#   build build/var12r alu_packs.patch 12_three_warpgroups packK -DALU_PACKS=K   (K = 1, 2, 4)
#   ... emuK -DEMU_EXP=K (K = 4, 8); pack1emu8 -DEMU_EXP=8 -DALU_PACKS=1; ring from ring.patch
# carried apart (build/var12r). Then: Nsight Compute's pipe counters on base and pack1, checks,
# launch by launch timing of all against the step (base.so) at D = 64, then D = 128 (unchanged code:
# the noise floor).
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; under 1 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
w=$(mktemp -d)
cp build/steps/12_three_warpgroups.so "$w/base.so"
for v in pack1 pack2 pack4 emu4 emu8 pack1emu8 ring; do cp build/var12r/$v.so "$w/$v.so"; done
M=sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active
M=$M,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg,sm__inst_executed_pipe_xu.sum
M2=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active   # its own query: the name may differ
for v in base pack1; do
    for m in "$M" "$M2"; do
        echo "== $v"
        timeout -k 5 100 ncu --clock-control none --metrics "$m" -k regex:attention_fwd --launch-skip 1 -c 1 \
            build/v15/ab --rounds 1 --reps 1 --shape 4,8,16384,16384,64 "$w/$v.so" 2>&1 | grep -E "^\s+(sm|smsp)__|ERR"
    done
done >"$o/pipes.txt" 2>&1
for v in pack1 emu4 pack1emu8; do
    d=$(steps_with 12_three_warpgroups="$w/$v.so")
    echo "#### $v"
    quick_runs "$d" 12 "" "2,8,4096,4096,64" "1,8,3000,2900,64 --causal" "2,4,16384,1000,64"
    quick_runs "$d" 12 "--inputs far" "1,4,5000,4000,64 --causal"
done >"$o/checks.txt" 2>&1
timeout -k 5 200 build/v15/ab --rounds 3 --reps 6 --shape 4,8,16384,16384,64 --shape 4,8,16384,16384,64,c \
    --shape 4,8,4096,4096,64 --shape 4,8,4096,4096,64,c --shape 4,8,16384,16384,128 \
    "$w/base.so" "$w/pack1.so" "$w/pack2.so" "$w/pack4.so" "$w/emu4.so" "$w/emu8.so" "$w/pack1emu8.so" \
    "$w/ring.so" >"$o/ab.csv" 2>"$o/ab.log"
cat "$o/pipes.txt"
grep -E "^##|rel|FAIL" "$o/checks.txt" | cut -c1-160 | head -40
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
