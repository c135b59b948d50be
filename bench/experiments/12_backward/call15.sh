#!/usr/bin/env bash
# Fifteenth device call of step 12 (one GPU; the checking half of the records of the committed
# step, after call 14's timing), everything at once:
#   check12.txt/.csv  attn check --steps 12, the whole grid
#   gpu_tests.txt     the Criterion GPU tests (every step)
#   sanitize.txt      memcheck, racecheck, synccheck of the backward on call 3's 8 shapes
#   runs.txt          attn run --backward on edge and long shapes
#   python_tests.txt  pytest tests/test_torch.py;  repeat.txt  five backwards on the same inputs
#   train_demo.txt, cli.txt   the Python training demo (step 12 both ways), the CLI record
# Usage (repo root): bench/experiments/12_backward/call15.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
{ echo "commit $sha"; timeout 480 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1 &
{ echo "commit $sha"; timeout 400 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1 &
mkdir -p $o/s; n=0
for tool in racecheck memcheck synccheck; do
  for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,129,1,64 --causal" \
            "1,2,1,129,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal" "1,1,700,300,64"; do
    n=$((n+1))
    ( out=$(timeout 400 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
      echo "step 12 $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt
      [ $rc != 0 ] && grep -E "Race reported|access at" <<<"$out" | head -6 >> $o/s/$(printf %02d $n).txt ) &
  done
done
{ echo "commit $sha"; for sh in "1,1,8192,8191,128" "1,2,4096,4096,64 --causal" "3,47,257,4099,128" "1,1,33700,2900,128 --causal" \
     "1,2,17,1000,64" "1,2,1000,17,128 --causal" "2,1,1,1,64" "1,1,1025,1000,128 --causal" "1,2,65,300,64 --causal"; do
   timeout 150 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | grep -E "^problem|^check"; done; } > $o/runs.txt 2>&1
say runs
{ echo "commit $sha"; timeout 250 env -u LD_LIBRARY_PATH python3 -m pytest -q -rs tests/test_torch.py; echo "[exit status $?]"; } > $o/python_tests.txt 2>&1; say pytest
{ echo "commit $sha"; timeout 150 env -u LD_LIBRARY_PATH python3 $d/repeat_bwd.py; echo "[exit status $?]"; } > $o/repeat.txt 2>&1; say repeat
{ echo "commit $sha"; timeout 150 env -u LD_LIBRARY_PATH python3 python/train_demo.py; echo "[exit status $?]"; } > $o/train_demo.txt 2>&1
{ echo "commit $sha"; timeout 100 bash bench/cli_examples.sh; } > $o/cli.txt 2>&1; say demo, cli
wait
{ echo "commit $sha"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s
tar cf $o/more.tar -C $o runs.txt python_tests.txt repeat.txt train_demo.txt cli.txt r.log && rm $o/runs.txt $o/python_tests.txt $o/repeat.txt $o/train_demo.txt $o/cli.txt
say done
