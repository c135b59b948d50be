#!/usr/bin/env bash
# The steps as committed (80-row causal tiles, the forward's stages, produce()) on the H200: the
# whole GPU suite (its four grids are the check grid for every step; its deterministic test holds
# a causal D = 128 shape at Nq = 8200, the 80-row path) beside the Python door's tests and
# training demo, then memcheck on a causal Nq = 8200 backward of steps 13 and 14. profile.sh runs
# first, alone on the GPU, in the same call.
# With `quick`, the suite without its four grids (each test on its own, ~2 min).
# usage (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~6 min): verify.sh OUT [quick]
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: verify.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
if [ "${2:-}" = quick ]; then
    { echo "commit $(cat .git-sha), the suite without its four grids"
      for t in $(grep -o 'Test(gpu, [a-z0-9_]*' tests/test_gpu.c | sed 's/Test(gpu, //' | grep -v '^grid_'); do
          timeout -k 5 100 build/tests/gpu --verbose --filter "gpu/$t" 2>&1; echo "[exit status $?]"
      done; } >"$o/gpu_tests.txt" &
else
    { echo "commit $(cat .git-sha)"; timeout -k 5 420 build/tests/gpu --verbose 2>&1; echo "[exit status $?]"; } \
        >"$o/gpu_tests.txt" &
fi
{ python_door "$o/door.txt"; { echo "commit $(cat .git-sha)"; cat "$o/door.txt"; } >"$o/python.txt"; rm "$o/door.txt"; } &
wait
for st in 13 14; do
    timeout -k 5 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/attn run --step $st --backward \
        --shape 1,2,8200,8192,128 --causal --reps 1 2>&1 | grep -E "ERROR SUMMARY|^check|FAIL|rror"
    echo "step $st memcheck rc ${PIPESTATUS[0]}"
done >"$o/memcheck.txt" 2>&1
grep -E 'Synthesis|exit status|^\[FAIL' "$o/gpu_tests.txt"; tail -12 "$o/python.txt"; cat "$o/memcheck.txt"
