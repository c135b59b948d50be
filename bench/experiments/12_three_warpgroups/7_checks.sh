#!/usr/bin/env bash
# The checks of steps 12 and 13 after few_tiles and the deterministic backward, one call on the
# H200, everything at once (3_checks.sh, and the sanitizers on the deterministic backward too):
#   gpu_tests.txt     build/tests/gpu (every step)
#   logs.tgz: check.txt/.csv (attn check --steps 12,13, every input mode), check_far.txt/.csv
#   (--inputs far), sanitize.txt (bench/sanitize.sh 12 13), mutants.txt (tests/mutant_tile.sh,
#   tests/mutant_far.sh), python.txt (pytest tests/test_torch.py, python/train_demo.py)
# usage: bench/experiments/12_three_warpgroups/7_checks.sh OUT   (from the repository root)
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
{ echo "commit $sha"; timeout 500 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 500 build/attn check --steps 12,13 --csv $w/check.csv; echo "[exit status $?]"; } > $w/check.txt 2>&1 &
{ echo "commit $sha"; timeout 500 build/attn check --steps 12,13 --inputs far --csv $w/check_far.csv; echo "[exit status $?]"; } > $w/check_far.txt 2>&1 &
for t in memcheck racecheck synccheck; do
  ( TOOLS=$t timeout 500 bench/sanitize.sh 12 13 > $w/s_$t.txt 2>&1; echo "[exit status $?]" >> $w/s_$t.txt ) &
done
cs=${CUDA:-/usr/local/cuda}/bin/compute-sanitizer; [ -x "$cs" ] || cs=compute-sanitizer
for t in memcheck racecheck synccheck; do   # as bench/sanitize.sh, its lines' form
  ( for s in "2,3,300,257,64 --causal" "1,3,200,333,128"; do
      out=$(timeout 300 "$cs" --tool $t --error-exitcode 99 build/attn run --step 13 --shape $s \
            --backward --deterministic --reps 1 2>&1); rc=$?
      summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" <<<"$out" | tail -1)
      verdict=$(grep -E "^result|-> (PASS|FAIL)" <<<"$out" | tail -1)
      echo "step 13 $t --backward --deterministic $s: rc $rc; ${summary:-no summary}; ${verdict}"
      [ $rc -eq 0 ] || grep -E "Invalid|race|Race|hazard|barrier" <<<"$out" | head -5
    done > $w/d_$t.txt 2>&1 ) &
done
{ echo "# tests/mutant_tile.sh"; echo "commit $sha"; timeout 500 bash tests/mutant_tile.sh; echo "[exit status $?]"
  echo; echo "# tests/mutant_far.sh"; echo "commit $sha"; timeout 300 bash tests/mutant_far.sh; echo "[exit status $?]"; } > $w/mutants.txt 2>&1 &
{ echo "# pytest tests/test_torch.py: the PyTorch front door's tests"; echo "commit $sha"
  timeout 300 python3 -m pytest -q tests/test_torch.py 2>&1 | tail -40; echo "[exit status ${PIPESTATUS[0]}]"
  echo; echo "# python3 python/train_demo.py: a one-layer model trained through the front door"; echo "commit $sha"
  timeout 200 python3 python/train_demo.py 2>&1 | tail -30; echo "[exit status ${PIPESTATUS[0]}]"; } > $w/python.txt 2>&1
wait
{ echo "commit $sha"; cat $w/s_memcheck.txt $w/s_racecheck.txt $w/s_synccheck.txt; } > $w/sanitize.txt
{ echo "commit $sha"; cat $w/d_memcheck.txt $w/d_racecheck.txt $w/d_synccheck.txt; } > $w/sanitize_det.txt
rm -f $w/s_* $w/d_*
tar czf $o/logs.tgz -C $w .
echo "done at $((SECONDS-t0)) s"
grep -E "Synthesis" $o/gpu_tests.txt; grep -E "^1[23]_.*PASS|^OK|FAIL [1-9]" $w/check.txt $w/check_far.txt
echo "sanitize: $(grep -c 'rc 0;' $w/sanitize.txt) clean of $(grep -c '^step' $w/sanitize.txt)"
echo "sanitize det: $(grep -c 'rc 0;' $w/sanitize_det.txt) clean of $(grep -c '^step' $w/sanitize_det.txt)"
grep -E "OK|FAILED|exit status" $w/mutants.txt; grep -E "passed|failed|exit status" $w/python.txt
