#!/usr/bin/env bash
# The fifth call: step 12 in its staged form (BwdConsumer's stages) with the shifted-keys mask
# (a padded key moved 2^30 later, the queries 2^29 later when not causal), checked; beside it
# the three-warpgroup forward (build/w3/11_persistent.so, bench/experiments/12_three_warpgroups)
# on step 11's grid. At once: gpu_tests.txt, mutant_far.txt, sanitize12.txt, far_table12.txt,
# python.txt (pytest tests/test_torch.py, python/train_demo.py), check_w3.txt, sanitize_w3.txt
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
{ echo "commit $sha"; timeout 400 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 400 bash tests/mutant_far.sh; echo "[exit status $?]"; } > $w/mutant_far.txt 2>&1 &
for t in memcheck racecheck synccheck; do
  ( TOOLS=$t timeout 400 bench/sanitize.sh 12 > $w/s12_$t.txt 2>&1; echo "[exit status $?]" >> $w/s12_$t.txt ) &
  ( ATTN_STEPS_DIR=build/w3 TOOLS=$t timeout 400 bench/sanitize.sh 11 > $w/w3_$t.txt 2>&1; echo "[exit status $?]" >> $w/w3_$t.txt ) &
done
{ echo "commit $sha (build/w3/11_persistent.so: step 11 with three consumer warpgroups at D = 64)"
  ATTN_STEPS_DIR=build/w3 timeout 400 build/attn check --step 11; echo "[exit status $?]"; } > $w/check_w3.txt 2>&1 &
{ echo "commit $sha"
  for s in "1,1,100,100,64" "1,1,100,100,128" "2,3,300,257,128 --causal" "1,2,129,200,64" "1,1,100,128,64"; do
    echo "## step 12 --shape $s --inputs far --backward"
    build/attn run --step 12 --shape $s --inputs far --backward --reps 3 --seed 7 2>&1 | grep -E '^(check|result|    )'
  done; } > $w/far_table12.txt 2>&1
{ echo "# pytest tests/test_torch.py: the PyTorch front door's tests"; echo "commit $sha"
  timeout 300 python3 -m pytest -q tests/test_torch.py 2>&1 | tail -40; echo "[exit status ${PIPESTATUS[0]}]"
  echo; echo "# python3 python/train_demo.py: a one-layer model trained through the front door"; echo "commit $sha"
  timeout 200 python3 python/train_demo.py 2>&1 | tail -30; echo "[exit status ${PIPESTATUS[0]}]"; } > $w/python.txt 2>&1
wait
{ echo "commit $sha"; cat $w/s12_memcheck.txt $w/s12_racecheck.txt $w/s12_synccheck.txt; } > $w/sanitize12.txt
{ echo "commit $sha (build/w3)"; cat $w/w3_memcheck.txt $w/w3_racecheck.txt $w/w3_synccheck.txt; } > $w/sanitize_w3.txt
rm -f $w/s12_* $w/w3_*
tar czf $o/logs.tgz -C $w .
echo "done at $((SECONDS-t0)) s"
grep -E "Synthesis" $o/gpu_tests.txt; tail -2 $w/mutant_far.txt; tail -3 $w/check_w3.txt
echo "sanitize 12: $(grep -c 'rc 0;' $w/sanitize12.txt) clean of $(grep -c '^step' $w/sanitize12.txt)"
echo "sanitize w3: $(grep -c 'rc 0;' $w/sanitize_w3.txt) clean of $(grep -c '^step' $w/sanitize_w3.txt)"
grep -E "passed|failed|exit status" $w/python.txt
