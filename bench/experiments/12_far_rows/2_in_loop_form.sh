#!/usr/bin/env bash
# The second call: step 12's mask in its final form (the key limit worked out inside the masking
# tiles), timed against the step before the fix and against the first form, then checked again.
#   ab_bwd.csv      bench/experiments/tools/ab.c: before (the parent of the fix), after1 (the first
#                   form, run.sh's "after"), v5 (the final form): the 8 bar shapes, 3 rounds, GPU time
# then, at once: check12.txt/.csv (attn check --steps 12, all four input modes), sanitize12.txt,
# mutant_far.txt, far_table12.txt, gpu_tests.txt
# Usage (repo root, on the GPU machine): bench/experiments/12_far_rows/2_in_loop_form.sh OUT
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
sh=""; for n in 4096 16384; do for d in 64 128; do sh="$sh --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
build/ab/ab --backward --rounds 3 --reps 20 $sh build/ab/before.so build/ab/after1.so build/ab/v5.so > $o/ab_bwd.csv 2> $w/ab.err
echo "ab done at $((SECONDS-t0)) s"
{ echo "commit $sha"; timeout 330 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1 &
{ echo "commit $sha"; timeout 330 build/tests/gpu --verbose; echo "[exit status $?]"; } > $w/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 330 bash tests/mutant_far.sh; echo "[exit status $?]"; } > $o/mutant_far.txt 2>&1 &
{ echo "commit $sha"
  for s in "1,1,100,100,64" "1,1,100,100,128" "2,3,300,257,128 --causal" "1,2,129,200,64" "1,1,100,128,64"; do
    echo "## step 12 --shape $s --inputs far --backward"
    build/attn run --step 12 --shape $s --inputs far --backward --reps 3 --seed 7 2>&1 | grep -E '^(check|result|    )'
  done; } > $o/far_table12.txt 2>&1
for t in memcheck racecheck synccheck; do
  ( TOOLS=$t timeout 330 bench/sanitize.sh 12 > $w/s12_$t.txt 2>&1; echo "[exit status $?]" >> $w/s12_$t.txt ) &
done
wait
{ echo "commit $sha"; cat $w/s12_memcheck.txt $w/s12_racecheck.txt $w/s12_synccheck.txt; } > $o/sanitize12.txt
mv $w/gpu_tests.txt $o/; rm -rf $w
echo "done at $((SECONDS-t0)) s"
python3 - $o/ab_bwd.csv <<'PY'
import csv, sys, collections
t = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    t[(r['shape'], r['causal'], r['variant'].split('/')[-1])].append(float(r['ms_median']))
keys = sorted({(s, c) for s, c, v in t})
for s, c in keys:
    b = sum(t[(s, c, 'before.so')]); print(s, c, ' '.join('%s %.4f' % (v, sum(t[(s, c, v)]) / b) for v in ('after1.so', 'v5.so')))
PY
tail -3 $o/check12.txt; grep -E "Synthesis" $o/gpu_tests.txt; tail -2 $o/mutant_far.txt
echo "sanitize: $(grep -c 'rc 0;' $o/sanitize12.txt) clean of $(grep -c '^step' $o/sanitize12.txt)"
