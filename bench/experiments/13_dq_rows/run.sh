#!/usr/bin/env bash
# Step 13's dQ at D = 64 by rows (each warpgroup 64 query rows of the tile over all 128 keys)
# against by keys (each its own 64 keys, all rows, both added into the same floats): the build
# of HEAD before the change (build/v13r/head.so) and the step (build/v13r/rows.so), on the H200.
#   checks   attn run --step 13 --backward (the new step) on ragged shapes, D = 64 and 128,
#            causal and not, deterministic and not; the GPU test of the deterministic backward
#   ab       launch by launch at the four D = 64 bar shapes and two D = 128 ones, 3 rounds of 10,
#            and the deterministic form at D = 64 (a build named X.so:det)
#   ncu      bwd_main<64> of both at 4,8,4096,4096,64: duration, L2 and shared-pipe throughput
# The builds, made here (make step-flags STEP=13 gives the flags F):
#   git show 3f6f2a2:steps/13_backward_wgmma/attention.cu > build/v13r/head.cu
#   patch -o build/v13r/rows.cu build/v13r/head.cu bench/experiments/13_dq_rows/rows.patch
#   nvcc $F -o build/v13r/head.so build/v13r/head.cu; nvcc $F -o build/v13r/rows.so build/v13r/rows.cu
# usage (from the repository root, build/v13r and build/v15/ab built here):
#   bash bench/experiments/13_dq_rows/run.sh OUT
set -u
o=${1:?usage: run.sh OUT}; mkdir -p "$o"
{ echo "commit $(cat .git-sha 2>/dev/null)"
  for s in "2,3,300,257,64" "1,4,1000,1000,64 --causal" "3,4,777,1313,64" "2,2,4096,4096,64 --causal" \
           "2,8,300,5000,64 --deterministic" "1,4,1000,1000,64 --causal --deterministic" \
           "2,3,333,517,128" "2,3,333,517,128 --deterministic" "1,2,2000,3000,128 --causal"; do
    echo "## attn run --step 13 --backward --shape $s"
    timeout -k 5 60 build/attn run --step 13 --backward --shape $s --reps 2 2>&1 | grep -E "^(check|timed)|FAIL|rror"
    echo "[exit status ${PIPESTATUS[0]}]"
  done
  echo "## build/tests/gpu --filter gpu/deterministic_backward_is_repeatable"
  timeout -k 5 120 build/tests/gpu --filter 'gpu/deterministic_backward_is_repeatable' --verbose 2>&1 |
      grep -E "deterministic|differ|FAIL|CRASH|Synthesis"
  echo "[exit status ${PIPESTATUS[0]}]"
} > "$o/checks.txt" 2>&1
grep -cE "PASS" "$o/checks.txt"; grep -E "FAIL|exit status [1-9]|Synthesis" "$o/checks.txt"
S="--shape 4,8,4096,4096,64 --shape 4,8,4096,4096,64,c --shape 4,8,16384,16384,64 --shape 4,8,16384,16384,64,c --shape 4,8,4096,4096,128 --shape 4,8,16384,16384,128,c"
timeout 240 build/v15/ab --backward --rounds 3 --reps 10 $S build/v13r/head.so build/v13r/rows.so > "$o/ab.csv" 2> "$o/ab.log"
timeout 120 build/v15/ab --backward --rounds 2 --reps 10 --shape 4,8,4096,4096,64 --shape 4,8,16384,16384,64 \
    build/v13r/head.so:det build/v13r/rows.so:det build/v13r/rows.so > "$o/ab_det.csv" 2>> "$o/ab.log"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_red.sum
for v in head rows; do
    echo "=== $v"
    timeout 90 ncu --clock-control none --metrics $M -k regex:bwd_main --launch-skip 1 --launch-count 1 \
        build/v15/ab --backward --rounds 1 --reps 1 --shape 4,8,4096,4096,64 build/v13r/$v.so 2>&1 | grep -vE "==PROF==|==WARNING==|Warning:"
done > "$o/ncu.txt" 2>&1
