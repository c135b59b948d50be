#!/usr/bin/env bash
# The third call: the mask's two final forms timed against the step before the fix, the variants
# taking turns launch by launch (run2's rounds drifted 6 % with the GPU's clock), then the form
# kept (build/steps) checked again.
#   ab_bwd3.csv   before (the parent of the fix), v5a (the key limit inside the masking tiles, the
#                 D = 64 dS^T row from the lane), v5b (the same with the row as key - k0): 8 bar
#                 shapes, 3 rounds of 15 launches each
# then, at once: gpu_tests.txt, mutant_far.txt, sanitize12.txt (v5b)
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
sh=""; for n in 4096 16384; do for d in 64 128; do sh="$sh --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
build/ab/ab --backward --rounds 3 --reps 15 $sh build/ab/before.so build/ab/v5a.so build/ab/v5b.so > $o/ab_bwd3.csv 2> $w/ab.err
echo "ab done at $((SECONDS-t0)) s"
{ echo "commit $sha"; timeout 290 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 290 bash tests/mutant_far.sh; echo "[exit status $?]"; } > $o/mutant_far.txt 2>&1 &
for t in memcheck racecheck synccheck; do
  ( TOOLS=$t timeout 290 bench/sanitize.sh 12 > $w/s12_$t.txt 2>&1; echo "[exit status $?]" >> $w/s12_$t.txt ) &
done
wait
{ echo "commit $sha"; cat $w/s12_memcheck.txt $w/s12_racecheck.txt $w/s12_synccheck.txt; } > $o/sanitize12.txt
rm -rf $w; echo "done at $((SECONDS-t0)) s"
python3 - $o/ab_bwd3.csv <<'PY'
import csv, sys, collections
t = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    t[(r['shape'], r['causal'], r['variant'].split('/')[-1])].append(float(r['ms_median']))
for s, c in sorted({(s, c) for s, c, v in t}):
    b = t[(s, c, 'before.so')]
    print(s, c, 'before', ' '.join('%.4f' % x for x in b), ' '.join('| %s %s' % (v, ' '.join('%.4f' % (x / y) for x, y in zip(t[(s, c, v)], b))) for v in ('v5a.so', 'v5b.so')))
PY
grep -E "Synthesis" $o/gpu_tests.txt; tail -2 $o/mutant_far.txt
echo "sanitize: $(grep -c 'rc 0;' $o/sanitize12.txt) clean of $(grep -c '^step' $o/sanitize12.txt)"
