#!/usr/bin/env bash
# Step 14's deterministic backward (step 13's writer warp and shifted walk, per query head of a
# group) on the H200, from the repository root, every GPU command under timeout (a wrong turn
# order hangs a kernel, not the call). OUT/det.txt:
#   attn run --step 14 --backward --deterministic on grouped and ungrouped shapes (checked against
#   the fp64 reference or step 00), the GPU test gpu/deterministic_backward_is_repeatable, racecheck
#   and synccheck on two grouped shapes, and the time over the default backward (--reps 10)
# usage: bench/experiments/14_gqa/det.sh OUT
set -u
o=$1; mkdir -p $o; f=$o/det.txt
cs=${CUDA:-/usr/local/cuda}/bin/compute-sanitizer; [ -x "$cs" ] || cs=compute-sanitizer
{ echo "commit $(cat .git-sha 2>/dev/null)"
  for s in "2,8,300,257,64,2 --causal" "1,8,1000,1000,128,1" "3,8,777,1313,128,4" "2,4,2049,4095,64,2 --causal" \
           "2,8,300,5000,128,8" "3,4,1500,700,64,1 --causal" "2,6,1000,1000,128 --causal"; do
    echo "## attn run --step 14 --backward --deterministic --shape $s"
    timeout -k 5 90 build/attn run --step 14 --backward --deterministic --shape $s --reps 3 2>&1 |
        grep -E "^(check|time|timed)|FAIL"
    echo "[exit status ${PIPESTATUS[0]}]"
  done
  echo "## build/tests/gpu --filter gpu/deterministic_backward_is_repeatable"
  timeout -k 5 120 build/tests/gpu --filter 'gpu/deterministic_backward_is_repeatable' --verbose 2>&1 |
      grep -E "deterministic|differ|FAIL|CRASH|Synthesis"
  echo "[exit status ${PIPESTATUS[0]}]"
  for t in racecheck synccheck; do
    for s in "1,4,200,333,128,1" "2,4,300,257,64,2 --causal"; do
      out=$(timeout -k 5 150 "$cs" --tool $t --error-exitcode 99 build/attn run --step 14 --shape $s \
            --backward --deterministic --reps 1 2>&1); rc=$?
      echo "step 14 $t --backward --deterministic $s: rc $rc; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" <<<"$out" | tail -1); $(grep -E -- "-> (PASS|FAIL)" <<<"$out" | tail -1 | sed 's/.*-> //')"
    done
  done
  for s in "4,32,4096,4096,128,8" "4,32,16384,16384,128,8" "4,32,4096,4096,128,8 --causal"; do
    for d in "" "--deterministic"; do
      echo "## time step 14 --backward $d $s"
      timeout -k 5 60 build/attn run --step 14 --backward $d --shape $s --reps 10 2>&1 | grep -E "^(time|rate)"
    done
  done; } > $f 2>&1
grep -E "^\[exit|rc [0-9]+;|^time|Synthesis" $f | sort | uniq -c | sort -rn | head -20
