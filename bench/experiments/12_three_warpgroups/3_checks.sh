#!/usr/bin/env bash
# The checks of steps 12 and 13, one call on the H200, everything at once:
#   gpu_tests.txt     build/tests/gpu (every step)
#   logs.tgz: check.txt/.csv (attn check --steps 12,13, every input mode), check_far.txt/.csv
#   (--inputs far), sanitize.txt (bench/sanitize.sh 12 13), mutants.txt (tests/mutant_tile.sh,
#   tests/mutant_far.sh), python.txt (pytest tests/test_torch.py, python/train_demo.py)
# usage: bench/experiments/12_three_warpgroups/3_checks.sh OUT   (from the repository root)
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
{ echo "commit $sha"; timeout 480 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 480 build/attn check --steps 12,13 --csv $w/check.csv; echo "[exit status $?]"; } > $w/check.txt 2>&1 &
{ echo "commit $sha"; timeout 480 build/attn check --steps 12,13 --inputs far --csv $w/check_far.csv; echo "[exit status $?]"; } > $w/check_far.txt 2>&1 &
for t in memcheck racecheck synccheck; do
  ( TOOLS=$t timeout 480 bench/sanitize.sh 12 13 > $w/s_$t.txt 2>&1; echo "[exit status $?]" >> $w/s_$t.txt ) &
done
{ echo "# tests/mutant_tile.sh"; echo "commit $sha"; timeout 480 bash tests/mutant_tile.sh; echo "[exit status $?]"
  echo; echo "# tests/mutant_far.sh"; echo "commit $sha"; timeout 300 bash tests/mutant_far.sh; echo "[exit status $?]"; } > $w/mutants.txt 2>&1 &
{ echo "# pytest tests/test_torch.py: the PyTorch front door's tests"; echo "commit $sha"
  timeout 300 python3 -m pytest -q tests/test_torch.py 2>&1 | tail -40; echo "[exit status ${PIPESTATUS[0]}]"
  echo; echo "# python3 python/train_demo.py: a one-layer model trained through the front door"; echo "commit $sha"
  timeout 200 python3 python/train_demo.py 2>&1 | tail -30; echo "[exit status ${PIPESTATUS[0]}]"; } > $w/python.txt 2>&1
wait
{ echo "commit $sha"; cat $w/s_memcheck.txt $w/s_racecheck.txt $w/s_synccheck.txt; } > $w/sanitize.txt
rm -f $w/s_*
tar czf $o/logs.tgz -C $w .
echo "done at $((SECONDS-t0)) s"
grep -E "Synthesis" $o/gpu_tests.txt; grep -E "^1[23]_.*PASS|^OK|FAIL [1-9]" $w/check.txt $w/check_far.txt
echo "sanitize: $(grep -c 'rc 0;' $w/sanitize.txt) clean of $(grep -c '^step' $w/sanitize.txt)"
grep -E "OK|FAILED|exit status" $w/mutants.txt; grep -E "passed|failed|exit status" $w/python.txt
