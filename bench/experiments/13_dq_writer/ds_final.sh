#!/usr/bin/env bash
# Steps 13 and 14 with dS^T stored before dV's product at D = 64 (DS_EARLY; next.sh's dse, the
# same machine code in step 13), in two calls back to back:
#   ds_final.sh suite OUT   the GPU suite alone (400 s), beside it bench/sanitize.sh 13 14
#                           (memcheck + synccheck, and racecheck); then the Python door's tests and
#                           its training demo
#   ds_final.sh rest OUT    step 14 before and after (build/var13/base14.so, dse14.so) launch by
#                           launch at D = 64 with 8 and 32 query heads per 8 K/V heads; then
#                           attn bench --sweep standard --steps 13, backward rows only
# (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; build/steps holds the steps as committed)
set -u
cd "$(dirname "$0")/../../.." || exit 2
part=${1:?usage: ds_final.sh suite|rest OUT}
o=${2:?usage: ds_final.sh suite|rest OUT}
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
    python_door "$o/python.txt"
    tail -n 3 "$o/python.txt"
    ;;
rest)
    cp build/var13/base14.so build/var13/base.so
    timeout -k 5 150 build/v15/ab --backward --rounds 4 --reps 8 --shape 4,8,4096,4096,64,2 \
        --shape 4,32,4096,4096,64,8,c --shape 4,32,16384,16384,64,8 --shape 4,8,16384,16384,64 \
        --shape 4,32,8192,8192,64,8 build/var13/base.so build/var13/dse14.so \
        >"$o/ab14.csv" 2>"$o/ab14.log"
    ab_ratios "$o/ab14.csv" | tee "$o/ab14_ratios.txt"
    sed 's/fwd,bwd/bwd/' bench/sweeps.txt >/tmp/sweeps_bwd
    {
        echo "commit $(cat .git-sha), steps as committed"
        ATTN_SWEEPS_FILE=/tmp/sweeps_bwd ATTN_GIT_SHA=$(cat .git-sha) timeout 300 build/attn bench \
            --sweep standard --steps 13 --out "$o/standard.csv"
        echo "== attn bench rc $?"
    } >"$o/bench.log" 2>&1
    tail -n 2 "$o/bench.log"
    ;;
*) echo "ds_final.sh: no part $part" >&2; exit 2 ;;
esac
