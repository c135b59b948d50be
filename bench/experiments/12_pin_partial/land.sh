#!/usr/bin/env bash
# PIN_COLS 4 landed in steps 12, 13 and 14 (Tiles<64>::PIN_COLS). On the H200, one call with
# .carry (b.txz: the builds below, build/v15/ab, the libraries), LD_LIBRARY_PATH=$PWD/.device-libs:
#   ab      the landed D = 64 forward against the step before it (base) and the measured pin4
#           build, steps 12, 13 and 14, at the six D = 64 shapes of run.sh, 3 rounds (~1 min)
#   checks  the GPU suite and the sanitizers on steps 12-14 (candidates.sh's suite), the Python
#           door, and attn check --steps 12 whole and --steps 13,14 --forward, cut at 330 s
# Builds, here: make; then build/varpin/aNN/base.so from HEAD~ of steps/NN_*/attention.cu, new.so
# = build/steps/NN_*.so, build/varpin/a12/pin4.so = build/var12p/pin4.so (run.sh's).
# The sanitizers there were cut by their limit in step 13; `land.sh OUT sanitize 14` runs
# bench/sanitize.sh on the steps named, memcheck, synccheck and racecheck side by side (~4 min).
#   usage: land.sh OUT [sanitize STEP...]
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: land.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
unpack_carry
if [ "${2:-}" = sanitize ]; then
    shift 2
    for t in memcheck synccheck racecheck; do
        { TOOLS=$t timeout -k 5 240 bench/sanitize.sh "$@"; echo "[exit status $?]"; } >"$o/sanitize_$t.txt" 2>&1 &
    done
    wait
    for t in memcheck synccheck racecheck; do
        echo "$t: $(grep -c 'rc 0;' "$o/sanitize_$t.txt") clean of $(grep -c '^step ' "$o/sanitize_$t.txt") runs, $(tail -n 1 "$o/sanitize_$t.txt")"
    done
    exit 0
fi
S="--shape 4,8,4096,4096,64 --shape 4,8,4096,4096,64,c --shape 4,8,8192,8192,64 --shape 4,8,8192,8192,64,c"
S="$S --shape 4,8,16384,16384,64 --shape 4,8,16384,16384,64,c"
v=build/varpin
for s in 12 13 14; do
    # shellcheck disable=SC2086
    timeout -k 5 120 build/v15/ab --rounds 3 --reps 20 $S $v/a$s/*.so >"$o/ab_$s.csv" 2>>"$o/ab.log"
    echo "step $s"; ab_ratios "$o/ab_$s.csv"
done | tee "$o/ab_ratios.txt"
suite build/steps "$o" 12 13 14 &
python_door "$o/python.txt" &
{ timeout -k 5 330 build/attn check --steps 12 --csv "$o/check_12.csv"; echo "[exit status $?]"; } \
    >"$o/check_12.txt" 2>&1 &
{ timeout -k 5 330 build/attn check --steps 13,14 --forward --csv "$o/check_13_14.csv"; echo "[exit status $?]"; } \
    >"$o/check_13_14.txt" 2>&1 &
wait
suite_summary "$o" 2>/dev/null
tail -n 3 "$o"/check_1*.txt "$o/python.txt"
