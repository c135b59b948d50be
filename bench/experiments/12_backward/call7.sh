#!/usr/bin/env bash
# Seventh device call of step 12: the Python tests again after the fix of the one call 6 failed
# (python_tests.txt), and Nsight Compute's warp stalls of bwd_main<128> by source line at
# N = 4096, not causal (source.csv, from the report bwd128.ncu-rep).
set -u
o=$1; sha=$(cat .git-sha 2>/dev/null || echo unknown)
{ echo "commit $sha"; timeout 200 env -u LD_LIBRARY_PATH python3 -m pytest -q -rs tests/test_torch.py; echo "[exit status $?]"; } > $o/python_tests.txt 2>&1
timeout 200 ncu --clock-control none --section WarpStateStats --section SourceCounters --section SpeedOfLight --import-source yes \
  -k regex:bwd_main -c 1 -o $o/bwd128 build/attn run --step 12 --backward --shape 4,8,4096,4096,128 --reps 1 > $o/ncu.log 2>&1
ncu -i $o/bwd128.ncu-rep --page source --csv --print-source cuda > $o/source.csv 2>> $o/ncu.log ||
  ncu -i $o/bwd128.ncu-rep --page source --csv --print-source sass > $o/source.csv 2>> $o/ncu.log
ncu -i $o/bwd128.ncu-rep --page details > $o/details.txt 2>> $o/ncu.log
