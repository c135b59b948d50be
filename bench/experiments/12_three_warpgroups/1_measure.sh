#!/usr/bin/env bash
# The first measurement (GPU time only, one call on the H200, FlashAttention-4 installed by the
# call before it: ../../../../shared/tools/fa4-install.sh). Writes into OUT:
#   ab_fwd.csv     step 11 against its three-warpgroup builds at D = 64 (w3_p24: 192 x 128 tiles,
#                  producer 24 / consumers 160 registers; w3_p32: producer 32), 3 rounds of 15
#                  launches each, taking turns launch by launch (../tools/ab.c)
#   ab_bwd.csv     step 12's backward: before the padded-key fix, the flat shifted-keys form (v8)
#                  and the staged form with shifted keys (the step), the 8 bar shapes
#   peers_bars.csv, bars.csv   SDPA cuDNN and FlashAttention-4 (bench/peer_sdpa.py), then steps
#                  11 and 12 (attn bench), fwd and bwd at the bar shapes (bars.txt)
#   ncu.txt        Nsight Compute (clocks not locked) on step 11 and on FlashAttention-4,
#                  D = 128 and D = 64, N = 4096, not causal
# usage: bench/experiments/12_three_warpgroups/1_measure.sh OUT   (from the repository root)
set -u
o=$1; t0=$SECONDS; E=bench/experiments/12_three_warpgroups
log=$o/log.txt
say() { echo "$* at $((SECONDS - t0)) s" >>$log; }
{ echo "commit $(cat .git-sha 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; } >$log
bash fa4-install.sh out/fa4/b >>$log 2>&1; say "fa4-install rc $?"
sh64=""; for n in 4096 16384; do sh64="$sh64 --shape 4,8,$n,$n,64 --shape 4,8,$n,$n,64,c"; done
sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
timeout 120 build/ab/ab --rounds 3 --reps 15 $sh64 build/ab/s11.so build/ab/w3_p24.so build/ab/w3_p32.so \
    >$o/ab_fwd.csv 2>>$log; say "ab fwd rc $?"
timeout 150 build/ab/ab --backward --rounds 3 --reps 15 $sh8 build/ab/before.so build/ab/v8.so \
    build/ab/staged.so >$o/ab_bwd.csv 2>>$log; say "ab bwd rc $?"
ATTN_SWEEPS_FILE=$E/bars.txt timeout 200 python3 bench/peer_sdpa.py --sweep bars --backends cudnn,fa4 \
    --out $o/peers_bars.csv 2>>$log; say "peers rc $?"
ATTN_SWEEPS_FILE=$E/bars.txt timeout 100 build/attn bench --sweep bars --steps 11,12 --out $o/bars.csv \
    2>>$log; say "attn bench rc $?"
secs="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum"
for d in 128 64; do
    echo "######## step 11, 4,8,4096,4096,$d" >>$o/ncu.txt
    timeout 60 ncu --clock-control none $secs -k regex:attention_fwd -c 1 build/attn run --step 11 \
        --shape 4,8,4096,4096,$d --reps 1 >>$o/ncu.txt 2>&1
    echo "######## FlashAttention-4, 4,8,4096,4096,$d" >>$o/ncu.txt
    timeout 120 ncu --clock-control none $secs -k regex:'(?i)flash|fwd' --launch-skip 1 -c 1 \
        python3 $E/ncu_fa4.py 4 8 4096 $d 0 >>$o/ncu.txt 2>&1
    say "ncu D=$d rc $?"
done
