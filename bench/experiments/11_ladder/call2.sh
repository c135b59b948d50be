#!/usr/bin/env bash
# Second device call of the ladder's split: the correctness record of the commit, whose files
# become bench/results/h200/: gpu_tests.txt, mutant.txt, check.txt and check.csv, sanitize.txt.
# Usage (repo root, LD_LIBRARY_PATH set): bench/experiments/11_ladder/call2.sh OUT
set -u
o=$1; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
say start
{ echo "commit $sha"; build/tests/gpu --verbose; } > $o/gpu_tests.txt 2>&1; say gpu tests rc $?
{ echo "commit $sha"; bash tests/mutant_tile.sh; } > $o/mutant.txt 2>&1; say mutant rc $?
{ echo "commit $sha"; timeout 330 build/attn check --csv $o/check.csv; } > $o/check.txt 2>&1; say check rc $?
{ echo "commit $sha"; timeout 100 bench/sanitize.sh 06 08 09 10 11; } > $o/sanitize.txt 2>&1; say sanitize rc $?
