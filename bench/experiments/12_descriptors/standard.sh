#!/usr/bin/env bash
# The standard sweep of steps 12 and 13 (both carry step 12's forward with the descriptors and
# the pin) beside SDPA's flash and cuDNN backends and FlashAttention-4, one call on the H200
# (FlashAttention-4 installed first: ../shared/tools/fa4-install.sh). Its CSVs replace those
# steps' and peers' rows of bench/results/h200/standard.csv and peers_standard.csv.
#   standard.csv        attn bench --sweep standard --steps 12,13
#   peers_standard.csv  bench/peer_sdpa.py --sweep standard --backends flash,cudnn,fa4
#   bench.log           both sweeps' progress
# usage: bench/experiments/12_descriptors/standard.sh OUT   (from the repository root)
set -u
o=$1; t0=$SECONDS; log=$o/bench.log
say() { echo "== $* at $((SECONDS - t0)) s" >>$log; }
{ echo "commit $(cat .git-sha 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$log
timeout 330 build/attn bench --sweep standard --steps 12,13 --out $o/standard.csv 2>>$log; say "attn bench rc $?"
timeout 200 python3 bench/peer_sdpa.py --sweep standard --backends flash,cudnn,fa4 --out $o/peers_standard.csv \
    2>>$log; say "peers rc $?"
