#!/usr/bin/env bash
# The benchmark of steps 12 and 13 beside the peers, one call on the H200 (FlashAttention-4
# installed in it first: ../shared/tools/fa4-install.sh, its first part copied by the call before).
#   ab_bwd.csv        the backward before the renumbering (build/ab/v8.so: step 12's backward with
#                     the shifted-keys mask, the kernel step 13 carries) against step 13, launch by
#                     launch, the 8 bar shapes
#   standard.csv      attn bench --sweep standard --steps 12,13
#   peers_standard.csv  bench/peer_sdpa.py --sweep standard --backends flash,cudnn,fa4
#   bench.log         both sweeps' progress
# usage: bench/experiments/12_three_warpgroups/2_bench.sh OUT   (from the repository root)
set -u
o=$1; t0=$SECONDS; log=$o/bench.log
say() { echo "== $* at $((SECONDS - t0)) s" >>$log; }
{ echo "commit $(cat .git-sha 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$log
bash fa4-install.sh out/fa4/b >>$log 2>&1; say "fa4-install rc $?"
sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
timeout 60 build/ab/ab --backward --rounds 2 --reps 10 $sh8 build/ab/v8.so build/steps/13_backward_wgmma.so \
    >$o/ab_bwd.csv 2>>$log; say "ab bwd rc $?"
timeout 320 build/attn bench --sweep standard --steps 12,13 --out $o/standard.csv 2>>$log; say "attn bench rc $?"
timeout 190 python3 bench/peer_sdpa.py --sweep standard --backends flash,cudnn,fa4 --out $o/peers_standard.csv \
    2>>$log; say "peers rc $?"
