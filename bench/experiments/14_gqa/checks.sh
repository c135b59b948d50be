#!/usr/bin/env bash
# Step 14 (grouped-query attention) on the H200, one call: first its speed against step 13 (alone
# on the GPU), then every check at once.
#   time.txt          attn run --reps 20 at 4,32,4096,4096,128: step 13 (MHA), step 14 with 8 K/V
#                     heads and with 32 (g = 1), forward and backward, causal and not
#   gpu_tests.txt     build/tests/gpu (every step)
#   logs.tgz: check.txt/.csv (attn check --steps 00,14), check_far.txt/.csv (--inputs far),
#   sanitize.txt (bench/sanitize.sh 00 14), python.txt (pytest tests/test_torch.py, train_demo.py)
# usage: bench/experiments/14_gqa/checks.sh OUT   (from the repository root)
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
{ echo "commit $sha"
  for c in "" "--causal"; do for b in "" "--backward"; do
    for s in "13 4,32,4096,4096,128" "14 4,32,4096,4096,128,8" "14 4,32,4096,4096,128"; do
      set -- $s
      echo "## step $1 $2 $c $b"
      timeout 60 build/attn run --step $1 --shape $2 --reps 20 $c $b 2>&1 | grep -vE "^ *$"
    done
  done; done; } > $o/time.txt 2>&1
echo "timing done at $((SECONDS-t0)) s"
{ echo "commit $sha"; timeout 480 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 480 build/attn check --steps 00,14 --csv $w/check.csv; echo "[exit status $?]"; } > $w/check.txt 2>&1 &
{ echo "commit $sha"; timeout 480 build/attn check --steps 00,14 --inputs far --csv $w/check_far.csv; echo "[exit status $?]"; } > $w/check_far.txt 2>&1 &
for t in memcheck racecheck synccheck; do
  ( TOOLS=$t timeout 480 bench/sanitize.sh 00 14 > $w/s_$t.txt 2>&1; echo "[exit status $?]" >> $w/s_$t.txt ) &
done
{ echo "# pytest tests/test_torch.py: the PyTorch front door's tests"; echo "commit $sha"
  timeout 400 python3 -m pytest -q -rs tests/test_torch.py 2>&1 | tail -60; echo "[exit status ${PIPESTATUS[0]}]"
  echo; echo "# python3 python/train_demo.py: a one-layer model trained through the front door"; echo "commit $sha"
  timeout 100 python3 python/train_demo.py 2>&1 | tail -30; echo "[exit status ${PIPESTATUS[0]}]"; } > $w/python.txt 2>&1
wait
{ echo "commit $sha"; cat $w/s_memcheck.txt $w/s_racecheck.txt $w/s_synccheck.txt; } > $w/sanitize.txt
rm -f $w/s_*
tar czf $o/logs.tgz -C $w .
echo "done at $((SECONDS-t0)) s"
grep -E "Synthesis" $o/gpu_tests.txt; grep -E "^(00|14)_.*PASS|^OK|FAIL [1-9]" $w/check.txt $w/check_far.txt
echo "sanitize: $(grep -c 'rc 0;' $w/sanitize.txt) clean of $(grep -c '^step' $w/sanitize.txt)"
grep -E "passed|failed|exit status" $w/python.txt
grep -E "^##|time|TFLOP" $o/time.txt | head -60
