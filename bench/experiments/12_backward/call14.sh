#!/usr/bin/env bash
# Fourteenth device call of step 12 (one GPU; the timing half of the records, call 15 is the rest):
# the committed step (dK after dQ and dS^T by stmatrix, both at D = 128 only), then SDPA's, then
# make_call13.py's group variant (causal blocks by groups of heads), nothing else on the GPU:
#   standard12.csv   step 12's rows of the standard sweep (it holds the bar shapes)
#   peers_bars.csv   SDPA's cuDNN and flash backwards at the bar shapes, right after
#   bars_group.csv   the group variant at the bar shapes
# Usage (repo root): bench/experiments/12_backward/call14.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
build/attn bench --sweep standard --steps 12 --out $o/standard12.csv 2>> $log; say standard
ATTN_SWEEPS_FILE=$d/bars.txt env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
ATTN_SWEEPS_FILE=$d/bars.txt ATTN_STEPS_DIR=build/var_group build/attn bench --sweep bwdbars --steps 12 --out $o/bars_group.csv >> $log 2>&1; say group
