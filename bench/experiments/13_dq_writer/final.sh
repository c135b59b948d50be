#!/usr/bin/env bash
# Steps 13 and 14 as landed (the dQ writer, dQ by rows at every N: by keys removed), in two calls
# back to back (FlashAttention-4's wheels travel in two carries: ../tools/candidates.sh):
#   final.sh suite OUT      the GPU suite alone (400 s), beside it bench/sanitize.sh 13 14 (memcheck
#                           + synccheck, and racecheck)
#   final.sh standard OUT   (FlashAttention-4 installed) attn bench --sweep standard --steps 13,
#                           backward rows only, then SDPA flash, cuDNN and FlashAttention-4 on the
#                           same; the Python door's tests and its training demo
# (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; build/steps holds the steps as committed)
set -u
cd "$(dirname "$0")/../../.." || exit 2
part=${1:?usage: final.sh suite|standard OUT}
o=${2:?usage: final.sh suite|standard OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
case $part in
suite)
    { timeout -k 5 400 build/tests/gpu --verbose; echo "[exit status $?]"; } >"$o/gpu_tests.txt" 2>&1 &
    { TOOLS="memcheck synccheck" timeout -k 5 390 bench/sanitize.sh 13 14; echo "[exit status $?]"; } \
        >"$o/sanitize_mem_sync.txt" 2>&1 &
    { TOOLS="racecheck" timeout -k 5 390 bench/sanitize.sh 13 14; echo "[exit status $?]"; } \
        >"$o/sanitize_race.txt" 2>&1 &
    wait
    suite_summary "$o" | tee "$o/summary.txt"
    ;;
standard)
    sed 's/fwd,bwd/bwd/' bench/sweeps.txt >/tmp/sweeps_bwd
    standard_run "$o" bwd 13
    python_door "$o/python.txt"
    tail -n 3 "$o/bench.log"
    cat "$o/python.txt"
    ;;
*) echo "final.sh: no part $part" >&2; exit 2 ;;
esac
