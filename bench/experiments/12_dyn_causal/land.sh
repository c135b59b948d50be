#!/usr/bin/env bash
# The dynamic causal grid landed (steps 12-14 as committed): what its A/B (run.sh) did not cover.
# On the H200; carry .carry (the builds, .device-libs) and FlashAttention-4's share of the call
# (build/fa4s1 in the first, build/fa4s2 in the second); LD_LIBRARY_PATH=$PWD/.device-libs.
#   land.sh checks OUT   (~6 min) the GPU suite; attn check --forward of steps 13 and 14 (their
#                        forward is step 12's, DYN included); compute-sanitizer's three tools on
#                        steps 13 and 14's forward at the causal shapes that reach the counter;
#                        the Python door's tests and training demo
#   land.sh bars OUT     (~8 min) FlashAttention-4 installed (both calls' shares unpacked), the
#                        bars sweep (step 12's forward, step 13's backward, cuDNN and FA4 in the
#                        same call), then the standard sweep's forward rows of steps 12 and 13
#                        with SDPA flash, cuDNN and FA4 on the same shapes
#   land.sh fix OUT      (~6 min) after the fix for tiles <= SMs: build/v15/ab of base.so (step 12
#                        before DYN), dyn.so (DYN as first landed) and build/steps' step 12 at
#                        causal N = 512 and 1024 (and 4096, where nothing changed); then, side by
#                        side, the GPU suite, attn check --steps 12 --forward, bench/sanitize.sh 12
#   land.sh standard OUT (~7 min) FlashAttention-4 installed, the standard sweep's forward rows of
#                        steps 12 and 13 with the peers (as in bars), then the bars sweep again
set -u
cd "$(dirname "$0")/../../.." || exit 2
mode=${1:?usage: land.sh checks|bars OUT}
o=${2:?usage: land.sh checks|bars OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
cs=/usr/local/cuda/bin/compute-sanitizer
case $mode in
checks)
    { timeout -k 5 330 build/tests/gpu --verbose; echo "[exit status $?]"; } >"$o/gpu_tests.txt" 2>&1 &
    for s in 13 14; do
        { timeout -k 5 320 build/attn check --steps "$s" --forward; echo "[exit status $?]"; } \
            >"$o/check_$s.txt" 2>&1 &
    done
    for tool in memcheck racecheck synccheck; do
        for s in 13 14; do
            for sh in "1,140,260,65,64 --causal" "1,133,1,3000,128 --causal" "1,64,64,1400,128 --causal" \
                      "1,2,129,127,64 --causal" "1,1,300,65,128 --causal"; do
                # shellcheck disable=SC2086
                out=$(timeout 120 "$cs" --tool "$tool" --error-exitcode 99 build/attn run --step "$s" \
                      --shape $sh --dtype bf16 --reps 1 2>&1)
                rc=$?
                echo "step $s $tool --forward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E -- '-> (PASS|FAIL)' <<<"$out" | tail -1)"
            done
        done >"$o/sanitize_$tool.txt" 2>&1 &
    done
    python_door "$o/python.txt" &
    wait
    {
        echo "gpu tests: $(grep -E 'Synthesis' "$o/gpu_tests.txt")"
        grep -E '^\[FAIL\]|CRASH' "$o/gpu_tests.txt" | head
        for s in 13 14; do echo "check $s: $(grep -E '^1[34]_' "$o/check_$s.txt" | tail -1) $(tail -n 1 "$o/check_$s.txt")"; done
        for tool in memcheck racecheck synccheck; do
            echo "sanitize $tool: $(grep -c 'rc 0;' "$o/sanitize_$tool.txt") clean of $(grep -c '^step ' "$o/sanitize_$tool.txt") runs"
            grep '^step ' "$o/sanitize_$tool.txt" | grep -v 'rc 0;'
        done
        grep -E "passed|failed|mean loss|exit" "$o/python.txt"
    } | tee "$o/summary.txt"
    ;;
bars)
    fa4_install "$o"
    tail -n 2 "$o/fa4_install.txt"
    bars_run "$o" build/steps "the dynamic causal grid landed in steps 12-14 (bench/experiments/12_dyn_causal/land.sh bars)"
    standard_run "$o" fwd 12,13
    tail -n 3 "$o/bench.log"
    ;;
fix)
    shapes=""
    for d in 64 128; do
        for n in 512 1024 4096; do shapes="$shapes --shape 4,8,$n,$n,$d,c"; done
    done
    cp build/steps/12_three_warpgroups.so /tmp/fix.so
    # shellcheck disable=SC2086
    timeout -k 5 120 build/v15/ab --rounds 3 --reps 20 $shapes build/var/base.so build/var/dyn.so \
        /tmp/fix.so >"$o/ab.csv" 2>"$o/ab.log"
    echo "ab rc $?"
    ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
    { timeout -k 5 330 build/tests/gpu --verbose; echo "[exit status $?]"; } >"$o/gpu_tests.txt" 2>&1 &
    { timeout -k 5 320 build/attn check --steps 12 --forward; echo "[exit status $?]"; } >"$o/check_12.txt" 2>&1 &
    { TOOLS="memcheck synccheck" timeout -k 5 320 bench/sanitize.sh 12; echo "[exit status $?]"; } \
        >"$o/sanitize_mem_sync.txt" 2>&1 &
    { TOOLS=racecheck timeout -k 5 320 bench/sanitize.sh 12; echo "[exit status $?]"; } >"$o/sanitize_race.txt" 2>&1 &
    wait
    {
        echo "gpu tests: $(grep -E 'Synthesis' "$o/gpu_tests.txt")"
        echo "check 12: $(grep -E '^12_' "$o/check_12.txt" | tail -1) $(tail -n 1 "$o/check_12.txt")"
        for f in "$o"/sanitize_*.txt; do
            echo "$(basename "$f"): $(grep -c 'rc 0;' "$f") clean of $(grep -c '^step ' "$f") runs"
            grep '^step ' "$f" | grep -v 'rc 0;'
        done
    } | tee "$o/summary.txt"
    ;;
standard)
    fa4_install "$o"
    tail -n 2 "$o/fa4_install.txt"
    sed 's/fwd,bwd/fwd/' bench/sweeps.txt >/tmp/sweeps_fwd
    standard_run "$o" fwd 12,13
    tail -n 3 "$o/bench.log"
    bars_run "$o" build/steps "the dynamic causal grid with one block per tile where tiles <= SMs (bench/experiments/12_dyn_causal/land.sh standard)"
    ;;
esac
