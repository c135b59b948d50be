#!/usr/bin/env bash
# Twentieth device call of step 12 (one GPU), on call 19's commit: what call 19 could not bring back
# (its ninth file, the standard rows, was over the eight-file limit), and the Python records:
#   standard12_bwd128.csv  the D = 128 backward rows of the standard sweep (std_bwd128.txt)
#   python_tests.txt       pytest tests/test_torch.py (the front door's default backward is step 12)
#   repeat.txt             five backwards on the same inputs: which gradients are bitwise identical
#   train_demo.txt         the Python training demo
# Usage (repo root): bench/experiments/12_backward/call20.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
ATTN_SWEEPS_FILE=$d/std_bwd128.txt build/attn bench --sweep standard --steps 12 --out $o/standard12_bwd128.csv 2>> $log; say standard bwd 128
{ echo "commit $sha"; timeout 150 env -u LD_LIBRARY_PATH python3 -m pytest -q -rs tests/test_torch.py; echo "[exit status $?]"; } > $o/python_tests.txt 2>&1; say pytest
{ echo "commit $sha"; timeout 100 env -u LD_LIBRARY_PATH python3 $d/repeat_bwd.py; echo "[exit status $?]"; } > $o/repeat.txt 2>&1; say repeat
{ echo "commit $sha"; timeout 100 env -u LD_LIBRARY_PATH python3 python/train_demo.py; echo "[exit status $?]"; } > $o/train_demo.txt 2>&1; say demo
