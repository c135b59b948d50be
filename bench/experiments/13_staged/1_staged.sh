#!/usr/bin/env bash
# Step 13's backward in named stages (BwdConsumer) with its mask as a compare against a query
# past every key where a tile masks nothing (no branch), timed against the flat kernel of
# 2c134da (build/ab/flat13.so) launch by launch, then checked, all in one call:
#   ab_bwd.csv; logs.tgz: check13.txt (attn check --step 13, every input kind), gpu_tests.txt,
#   sanitize13.txt, mutant_far.txt, cli.txt (bench/cli_examples.sh)
# usage: bench/experiments/13_staged/1_staged.sh OUT   (from the repository root)
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
timeout 60 build/ab/ab --backward --rounds 2 --reps 10 $sh8 build/ab/flat13.so build/steps/13_backward_wgmma.so \
    > $o/ab_bwd.csv 2> $w/ab.err
echo "ab done at $((SECONDS-t0)) s"
{ echo "commit $sha"; timeout 330 build/tests/gpu --verbose; echo "[exit status $?]"; } > $w/gpu_tests.txt 2>&1 &
{ echo "commit $sha"; timeout 330 build/attn check --step 13 --csv $w/check13.csv; echo "[exit status $?]"; } > $w/check13.txt 2>&1 &
{ echo "commit $sha"; timeout 330 bash tests/mutant_far.sh; echo "[exit status $?]"; } > $w/mutant_far.txt 2>&1 &
for t in memcheck racecheck synccheck; do
  ( TOOLS=$t timeout 330 bench/sanitize.sh 13 > $w/s_$t.txt 2>&1; echo "[exit status $?]" >> $w/s_$t.txt ) &
done
{ echo "commit $sha"; timeout 120 bash bench/cli_examples.sh; } > $w/cli.txt 2>&1
wait
{ echo "commit $sha"; cat $w/s_memcheck.txt $w/s_racecheck.txt $w/s_synccheck.txt; } > $w/sanitize13.txt; rm -f $w/s_*
tar czf $o/logs.tgz -C $w .
echo "done at $((SECONDS-t0)) s"
grep -E "Synthesis" $w/gpu_tests.txt; grep -E "^13_.*PASS +[0-9]|^OK|FAIL [1-9]" $w/check13.txt; tail -2 $w/mutant_far.txt
echo "sanitize: $(grep -c 'rc 0;' $w/sanitize13.txt) clean of $(grep -c '^step' $w/sanitize13.txt)"
