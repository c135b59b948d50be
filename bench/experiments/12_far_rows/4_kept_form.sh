#!/usr/bin/env bash
# The fourth call: the mask decided before the loop (v6, the form kept: the loop's mask one compare
# and one select per score, as the causal mask alone was) timed against the step before the fix and
# against v5b (run3's form, the mask worked out in the loop, which the compiler split in two: 1.5-
# 1.8 % slower at D = 128), the variants taking turns launch by launch; then v6 checked again.
#   ab_bwd4.csv   before, v5b, v6: 8 bar shapes, 3 rounds of 15 launches each
# then, at once: gpu_tests.txt, mutant_far.txt, sanitize12.txt, far_table12.txt (v6, build/steps)
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
sh=""; for n in 4096 16384; do for d in 64 128; do sh="$sh --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
build/ab/ab --backward --rounds 3 --reps 15 $sh build/ab/before.so build/ab/v5b.so build/ab/v6.so > $o/ab_bwd4.csv 2> $w/ab.err
echo "ab done at $((SECONDS-t0)) s"
{ echo "commit $sha"; timeout 280 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 280 bash tests/mutant_far.sh; echo "[exit status $?]"; } > $o/mutant_far.txt 2>&1 &
for t in memcheck racecheck synccheck; do
  ( TOOLS=$t timeout 280 bench/sanitize.sh 12 > $w/s12_$t.txt 2>&1; echo "[exit status $?]" >> $w/s12_$t.txt ) &
done
{ echo "commit $sha"
  for s in "1,1,100,100,64" "1,1,100,100,128" "2,3,300,257,128 --causal" "1,2,129,200,64" "1,1,100,128,64"; do
    echo "## step 12 --shape $s --inputs far --backward"
    build/attn run --step 12 --shape $s --inputs far --backward --reps 3 --seed 7 2>&1 | grep -E '^(check|result|    )'
  done; } > $o/far_table12.txt 2>&1
wait
{ echo "commit $sha"; cat $w/s12_memcheck.txt $w/s12_racecheck.txt $w/s12_synccheck.txt; } > $o/sanitize12.txt
rm -rf $w; echo "done at $((SECONDS-t0)) s"
python3 - $o/ab_bwd4.csv <<'PY'
import csv, sys, collections
t = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    t[(r['shape'], r['causal'], r['variant'].split('/')[-1])].append(float(r['ms_median']))
for s, c in sorted({(s, c) for s, c, v in t}):
    b = t[(s, c, 'before.so')]
    print(s, c, 'before', ' '.join('%.4f' % x for x in b), ' '.join('| %s %s' % (v, ' '.join('%.4f' % (x / y) for x, y in zip(t[(s, c, v)], b))) for v in ('v5b.so', 'v6.so')))
PY
grep -E "Synthesis" $o/gpu_tests.txt; tail -2 $o/mutant_far.txt; grep -c "PASS" $o/far_table12.txt
echo "sanitize: $(grep -c 'rc 0;' $o/sanitize12.txt) clean of $(grep -c '^step' $o/sanitize12.txt)"
