#!/usr/bin/env bash
# Rows far from zero, on one H200: the fix of step 12's padded keys, measured and checked.
#   bars.csv         the Hopper backward's 8 bar shapes, step 12 before the fix (build/before/, the
#                    parent commit's step) and after, interleaved twice, alone on the GPU first
#   far_table.txt    steps 00, 06, 12 backward on the shapes where step 12's dQ was NaN, far inputs
# then, at once:
#   check_far.txt/.csv  attn check --inputs far, every step
#   gpu_tests.txt    the Criterion GPU tests (the four input modes' grids among them)
#   mutant_far.txt   tests/mutant_far.sh
#   sanitize.txt     bench/sanitize.sh on every step, one job per (step, tool)
# Build first (make, build/before/ with the parent's step 12 and step 00, .device-libs, .git-sha).
# Usage (repo root, on the GPU machine): bench/experiments/12_far_rows/1_first_form.sh OUT
set -u
o=$1; d=bench/experiments/12_far_rows; t0=$SECONDS; log=$o/run.log; w=$o/w; mkdir -p $w
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $o/gpu.txt 2>&1
for r in 1 2; do for v in before after; do
  dir=build/steps; [ $v = before ] && dir=build/before
  ATTN_SWEEPS_FILE=bench/experiments/12_backward/bars.txt ATTN_STEPS_DIR=$dir \
    build/attn bench --sweep bwdbars --steps 12 --out $w/$v$r.csv >> $log 2>&1; say $v $r
done; done
{ head -1 $w/before1.csv | sed 's/$/,build,round/'
  for r in 1 2; do for v in before after; do sed 1d $w/$v$r.csv | sed "s/\$/,$v,$r/"; done; done; } > $o/bars.csv
{ echo "commit $sha"
  for sh in "1,1,100,100,64" "1,1,100,100,128" "2,3,300,257,128 --causal" "1,2,129,200,64" "1,1,100,128,64"; do
    for s in 00 06 12; do
      echo "## step $s --shape $sh --inputs far --backward"
      build/attn run --step $s --shape $sh --inputs far --backward --reps 3 --seed 7 2>&1 | grep -E '^(check|result|    )'
    done
  done; } > $o/far_table.txt 2>&1; say far_table
{ echo "commit $sha"; timeout 420 build/attn check --inputs far --csv $o/check_far.csv; echo "[exit status $?]"; } > $o/check_far.txt 2>&1 &
{ echo "commit $sha"; timeout 480 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 420 bash tests/mutant_far.sh; echo "[exit status $?]"; } > $o/mutant_far.txt 2>&1 &
mkdir -p $w/s
for s in $(build/attn list | awk '$1 ~ /^[0-9][0-9]_/ { print substr($1, 1, 2) }'); do
  for t in memcheck racecheck synccheck; do echo "$s $t"; done
done | xargs -P 10 -L 1 bash -c 'TOOLS=$1 timeout 400 bench/sanitize.sh $0 > '$w'/s/$0_$1.txt 2>&1; echo "[exit status $?]" >> '$w'/s/$0_$1.txt'
say sanitize
{ echo "commit $sha"; for s in $(ls $w/s | sort); do cat $w/s/$s; done; } > $o/sanitize.txt
wait; say done
grep -E "^OK|^FAILED|PASS .*FAIL" $o/check_far.txt | tail -20
grep -E "^\[(PASS|FAIL)|Synthesis" $o/gpu_tests.txt
tail -12 $o/mutant_far.txt
echo "sanitize: $(grep -c 'rc 0;' $o/sanitize.txt) clean, $(grep -c '^step' $o/sanitize.txt) runs, $(grep -c 'exit status [^0]' $o/sanitize.txt) failing jobs"
tail -5 $log
