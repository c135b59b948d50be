#!/usr/bin/env bash
# Twenty-first device call of step 12 (one GPU), commit 5597c2a: call 16's long and edge shapes
# again on the final kernel (runs.txt: attn run --backward, checked against step 00 or the CPU),
# causal shapes of 2, 3 and 11 head sections among them.
# Usage (repo root): bench/experiments/12_backward/call21.sh OUT
set -u
o=$1; sha=$(cat .git-sha 2>/dev/null || echo unknown)
{ echo "commit $sha"; for sh in "1,140,600,600,64 --causal" "2,70,1000,1000,128 --causal" "4,8,4096,4096,128 --causal" \
     "1,1,8192,8191,128" "1,2,4096,4096,64 --causal" "3,47,257,4099,128" "1,1,33700,2900,128 --causal" \
     "1,2,17,1000,64" "1,2,1000,17,128 --causal" "2,1,1,1,64" "1,1,1025,1000,128 --causal" "1,2,65,300,64 --causal"; do
   timeout 60 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | grep -E "^problem|^check"; done; } > $o/runs.txt 2>&1
