#!/usr/bin/env bash
# Third device call of the ladder's split: the standard sweep of every step and of SDPA's backends,
# in one command (bench/run.sh's sweep without its attn check, which the second call ran). Its
# files become bench/results/h200/: meta.txt, standard.csv, peers_standard.csv, bench.log.
# Usage (repo root, LD_LIBRARY_PATH set): bench/experiments/11_ladder/call3.sh OUT
set -u
o=$1
{
    build/attn info
    echo "git_sha=$(cat .git-sha 2>/dev/null || echo unknown)"
    echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
    echo "torch=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
} > $o/meta.txt
for sweep in standard; do
    echo "== build/attn bench --sweep $sweep" >> $o/bench.log
    build/attn bench --sweep $sweep --out $o/$sweep.csv 2>> $o/bench.log
done
for sweep in standard; do
    echo "== python3 bench/peer_sdpa.py --sweep $sweep" >> $o/bench.log
    env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep $sweep --out $o/peers_$sweep.csv 2>> $o/bench.log
done
