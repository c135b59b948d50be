#!/usr/bin/env bash
# bench/peer_sdpa.py runs only where torch and a GPU are, so CI never runs it; a slip in its
# plumbing would first show on the GPU machine, as rows that say error. This runs its whole plan
# here against tests/fake_torch (a stand-in that returns at once; its CUDA graphs fail a replay
# whose captured inputs were freed, as --lockstep's first run on the H200 did): the bars sweep in
# two rounds with each kind of input, with --eager, with --lockstep, with no graph capturable
# (the eager fallback), our steps through the Python door (--steps, where built), and the decode
# sweep's grouped shapes; every row must be ok, rounds numbered, FlashAttention-4 skipped in one
# line; a backend that refuses a shape says so in its row.
# make test runs this; it needs python3, not torch or a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v python3 >/dev/null; then
    echo "tests/peer_script.sh skipped: no python3 here"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tests/peer_script.sh: FAILED: $*"; exit 1; }
run() {   # run NAME ARGS...: the script with the fake torch, its CSV NAME.csv and log NAME.log
    local name=$1
    shift
    PYTHONPATH=tests/fake_torch python3 bench/peer_sdpa.py "$@" --out "$tmp/$name.csv" 2>"$tmp/$name.log" ||
        { cat "$tmp/$name.log"; fail "bench/peer_sdpa.py $* exited $?"; }
}
check_rows() {   # check_rows NAME N: N data rows, every one ok
    local rows bad
    rows=$(($(wc -l <"$tmp/$1.csv") - 1))
    [ "$rows" -eq "$2" ] || fail "$1: $rows rows, expected $2"
    bad=$(awk -F, 'NR > 1 && $16 != "ok"' "$tmp/$1.csv" | head -3)
    [ -z "$bad" ] || fail "$1: rows not ok: $bad"
}
bars=$(awk '$1 == "bars"' bench/sweeps.txt | wc -l)   # shapes, each forward and backward
for inputs in randn uniform; do
    run "bars_$inputs" --sweep bars --backends flash,cudnn,fa4 --rounds 2 --inputs "$inputs"
    check_rows "bars_$inputs" $((bars * 2 * 2 * 2))
    head -1 "$tmp/bars_$inputs.csv" | grep -q ',round$' || fail "bars_$inputs: no round column"
    [ "$(awk -F, 'NR > 1 { print $NF }' "$tmp/bars_$inputs.csv" | sort -u | paste -sd,)" = 1,2 ] ||
        fail "bars_$inputs: rounds are not 1 and 2"
    [ "$(grep -c 'FlashAttention-4 is not installed' "$tmp/bars_$inputs.log")" -eq 1 ] ||
        fail "bars_$inputs: FlashAttention-4's absence not said once"
done
run eager --sweep bars --backends flash --eager
check_rows eager $((bars * 2))
[ "$(grep -c 'CUDA graph capture failed' "$tmp/eager.log")" -eq 0 ] || fail "eager: --eager still tried a graph"
run lockstep --sweep bars --backends flash,cudnn,fa4 --rounds 2 --lockstep
check_rows lockstep $((bars * 2 * 2 * 2))
run lockstep_read --sweep bars --backends flash,cudnn --lockstep --flush read
check_rows lockstep_read $((bars * 2 * 2))
# no graph can be captured: every call timed eagerly behind the spin, and the log says why
FAKE_TORCH_NO_GRAPHS=1 run nographs --sweep bars --backends flash,cudnn --lockstep
check_rows nographs $((bars * 2 * 2))
grep -q 'CUDA graph capture failed' "$tmp/nographs.log" || fail "nographs: the eager fallback is not said"
# a backend that refuses (flash takes no fp32, in the stand-in as in torch) is a row that says so,
# the others still timed, in either plan
single=$(awk '$1 == "single_head"' bench/sweeps.txt | wc -l)
for mode in plain lockstep; do
    flag=""; [ $mode = lockstep ] && flag=--lockstep
    run "refused_$mode" --sweep single_head --backends flash,math $flag
    [ "$(grep -c ',sdpa_flash,.*,unsupported,' "$tmp/refused_$mode.csv")" -eq "$single" ] &&
        [ "$(grep -c ',sdpa_math,.*,ok,' "$tmp/refused_$mode.csv")" -eq "$single" ] ||
        fail "refused_$mode: flash's refusals or math's rows are not as expected"
done
# our steps through the Python door (--steps): python/flash_steps.py imports and builds each call
# against the stand-in; the step's own call then refuses for want of a Hopper GPU, which its row
# says, and no Python error of the script's own shows
if ls build/steps/12_*.so build/steps/13_*.so >/dev/null 2>&1; then
    run steps --sweep bars --backends cudnn --steps 12,13 --rounds 2 --lockstep
    [ "$(($(wc -l <"$tmp/steps.csv") - 1))" -eq $((bars * 2 * 3 * 2)) ] || fail "steps: wrong row count"
    [ "$(grep -c ',sdpa_cudnn,.*,ok,' "$tmp/steps.csv")" -eq $((bars * 2 * 2)) ] || fail "steps: cuDNN rows not ok"
    ! grep -E 'TypeError|NameError|AttributeError|KeyError|IndexError' "$tmp/steps.log" | head -3 | grep . ||
        fail "steps: a Python error in the script's own code"
    grep -q 'needs a Hopper GPU' "$tmp/steps.log" || fail "steps: the steps' refusals do not say why"
fi
run decode --sweep decode --quick --backends cudnn
check_rows decode "$(awk '$1 == "decode" && $6 == 1' bench/sweeps.txt | wc -l)"
echo "tests/peer_script.sh: OK (the bars sweep in 2 rounds on randn and uniform inputs, --eager, --lockstep (zeroing and reading flushes), no graphs, a refusing backend, --steps 12,13, the decode sweep's quick shapes, against tests/fake_torch)"
