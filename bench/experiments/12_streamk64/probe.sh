#!/usr/bin/env bash
# Two questions the lease left (one short call on the H200, 2026-12-01):
#  1. Why stream-K at D = 64 took under 1 % at N = 4096 -> 2048 (B = 4, H = 8) where the rounds
#     promised ~11 %. Separate the two things that change: the rounds (352 work tiles are 2.67
#     rounds of 132, 704 are 5.33) and the walk (16 key tiles per work tile at N = 2048, 32 at
#     4096): step 12 before (base) against sk12 at 4,8,2048 (352, 16), 2,8,4096 (352, 32),
#     8,8,2048 (704, 16) and 4,8,4096 (704, 32); and Nsight Compute on both kernels at 4,8,2048
#     (duration; SM active cycles, mean and max: whether the SMs end together).
#  2. Where dQ by keys starts to pay at D = 64 (../13_dq_split: it lost at 8192, won at 16384):
#     rows (v13s/base) against keys at N = 12288, not causal and causal.
# Here: bench/experiments/15_decode/run.sh build; 12_streamk64/run.sh build; 13_dq_split/run.sh
# build; pack-libs. On the H200 (carry build/v15 build/v12k build/v13s .device-libs):
#   LD_LIBRARY_PATH=$PWD/.device-libs bash bench/experiments/12_streamk64/probe.sh OUT
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
o=${1:?usage: probe.sh OUT}
mkdir -p "$o"
K=build/v12k S=build/v13s
timeout -k 5 90 build/v15/ab --rounds 3 --reps 10 --shape 4,8,2048,2048,64 --shape 2,8,4096,4096,64 \
    --shape 8,8,2048,2048,64 --shape 4,8,4096,4096,64 $K/base.so $K/sk12.so >"$o/ab_fwd.csv" 2>"$o/ab_fwd.log"
timeout -k 5 120 build/v15/ab --backward --rounds 3 --reps 10 --shape 4,8,12288,12288,64 \
    --shape 4,8,12288,12288,64,c $S/base.so $S/keys.so >"$o/ab_bwd.csv" 2>"$o/ab_bwd.log"
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.avg.per_second,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed
for v in base sk12; do
    echo "=== $v 4,8,2048,2048,64"
    timeout -k 5 90 ncu --clock-control none --metrics $M -k regex:attention_fwd --launch-skip 1 --launch-count 1 \
        build/v15/ab --rounds 1 --reps 1 --shape 4,8,2048,2048,64 $K/$v.so 2>&1 | grep -v "==PROF=="
done >"$o/ncu_2048.txt" 2>&1
{ echo "forward, sk12's time over base's (step 12 before stream-K at D = 64)"
  ab_ratios "$o/ab_fwd.csv"
  echo "backward, keys' time over base's (dQ by rows)"; ab_ratios "$o/ab_bwd.csv"
  grep -E "===|duration|cycles_active|per_second|pipe_shared" "$o/ncu_2048.txt"; } >"$o/summary.txt"
cat "$o/summary.txt"
