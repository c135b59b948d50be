#!/usr/bin/env bash
# Step 12 with few_tiles (step 11's two warpgroups where 192-row tiles are fewer than two rounds)
# and step 13's deterministic backward, one call on the H200, the GPU idle for the timings first:
#   ab_small_n.csv   steps 11, 12 before few_tiles (build/ab/v12_base.so, 4_variants.sh's base)
#                    and 12, forward, launch by launch (../tools/ab.c), D = 64, N 512 .. 4096
#   standard_d64.csv attn bench --sweep standard --steps 12,13 over the standard sweep's D = 64
#                    lines only (sweeps_d64.txt: the rows of steps 12 and 13 that few_tiles and
#                    the backward's unmasked kernel changed)
#   ab_det.csv       step 13's backward, default and deterministic (ab's X.so:det), launch by
#                    launch, the eight bar shapes
#   gpu_tests.txt, python.txt, det_runs.txt  then the GPU tests, the Python door and the
#                    deterministic backward checked by attn run on seven shapes, together
# usage: bench/experiments/12_three_warpgroups/6_small_n.sh OUT   (from the repository root)
set -u
o=$1; t0=$SECONDS; w=$o/w; mkdir -p $w
sha=$(cat .git-sha 2>/dev/null || echo unknown)
echo "commit $sha" > $w/commit.txt
shs=""; for n in 512 1024 2048 4096; do shs="$shs --shape 4,8,$n,$n,64 --shape 4,8,$n,$n,64,c"; done
timeout 90 build/ab/ab --rounds 3 --reps 15 $shs build/steps/11_persistent.so build/ab/v12_base.so \
    build/steps/12_three_warpgroups.so > $w/ab_small_n.csv 2> $w/ab_small_n.err
echo "ab at $((SECONDS-t0)) s"
sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
timeout 150 build/ab/ab --backward --rounds 3 --reps 10 $sh8 build/steps/13_backward_wgmma.so \
    build/steps/13_backward_wgmma.so:det > $w/ab_det.csv 2> $w/ab_det.err
echo "ab det at $((SECONDS-t0)) s"
grep -E "^(#|standard .*,64 )" bench/sweeps.txt > $w/sweeps_d64.txt
ATTN_SWEEPS_FILE=$w/sweeps_d64.txt timeout 240 build/attn bench --sweep standard --steps 12,13 \
    --out $w/standard_d64.csv 2> $w/bench.log
echo "bench rc $? at $((SECONDS-t0)) s"
left=$((580 - (SECONDS - t0)))
{ echo "commit $sha"; timeout $left build/tests/gpu --verbose; echo "[exit status $?]"; } > $w/gpu_tests.txt 2>&1 &
{ echo "# pytest tests/test_torch.py: the PyTorch front door's tests"; echo "commit $sha"
  timeout $left python3 -m pytest -q tests/test_torch.py 2>&1 | tail -40; echo "[exit status ${PIPESTATUS[0]}]"
  echo; echo "# python3 python/train_demo.py: a one-layer model trained through the front door"; echo "commit $sha"
  timeout 200 python3 python/train_demo.py 2>&1 | tail -30; echo "[exit status ${PIPESTATUS[0]}]"; } > $w/python.txt 2>&1 &
{ echo "commit $sha"
  for s in "4,8,4096,4096,64" "4,8,4096,4096,128 --causal" "4,8,16384,16384,128" "2,3,300,257,64 --causal" \
           "1,4,1000,1000,128" "3,5,777,1313,128" "2,7,2049,4095,64 --causal"; do
    echo "## step 13 --shape $s --backward --deterministic"
    timeout 60 build/attn run --step 13 --shape $s --backward --deterministic --reps 3 2>&1 | grep -E '^(check|time|attn)'
  done; } > $w/det_runs.txt 2>&1
wait
tar czf $o/logs.tgz -C $w .
echo "done at $((SECONDS-t0)) s"
grep -E "Synthesis" $w/gpu_tests.txt; grep -E "passed|failed|exit status" $w/python.txt; tail -3 $w/bench.log
