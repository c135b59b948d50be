#!/usr/bin/env bash
# tools/run_tests.sh BINARY...: what `make test` runs after building, in order, each part's output
# shown as it comes and kept in build/test-logs/, then one closing line: N passed, N failed, N
# skipped (a test that skips says why in its own line above). Every part runs even after one
# fails; the exit status is 1 if any failed.
#   the Criterion binaries (build/tests/*): the GPU tests first, verbosely where a GPU is usable
#     (without one they skip as a whole, with the reason printed once)
#   every tests/*.sh, in name order (each one test; "skipped" in its last line counts it skipped)
#   python/flash_steps.py's listing (needs no torch), and tests/test_torch.py where torch and pytest
#     import
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
logs=build/test-logs
rm -rf "$logs"; mkdir -p "$logs"
passed=0 failed=0 skipped=0 failures=""
fail() { failed=$((failed + $1)); failures="$failures $2"; }

gpu_verbose=""
build/attn info >/dev/null 2>&1 && gpu_verbose=--verbose
bins=()
for t in "$@"; do [ "$(basename "$t")" = gpu ] && bins=("$t" "${bins[@]}") || bins+=("$t"); done
for t in "${bins[@]}"; do
    name=$(basename "$t"); log=$logs/$name.log
    echo "== $t"
    if [ "$name" = gpu ]; then "$t" $gpu_verbose 2>&1 | tee "$log"; else "$t" 2>&1 | tee "$log"; fi
    rc=${PIPESTATUS[0]}
    syn=$(grep -o 'Tested: [0-9]* | Passing: [0-9]* | Failing: [0-9]* | Crashing: [0-9]*' "$log" | tail -1)
    read -r p f c <<<"$(sed 's/Tested: [0-9]* | Passing: \([0-9]*\) | Failing: \([0-9]*\) | Crashing: \([0-9]*\)/\1 \2 \3/' <<<"$syn")"
    passed=$((passed + ${p:-0}))
    s=$(sed -n 's/^\[SKIP\] \([0-9]*\) of [0-9]* [A-Z]* tests skipped.*/\1/p' "$log" | tail -1)
    skipped=$((skipped + ${s:-0}))
    if [ $rc -ne 0 ] || [ $((${f:-0} + ${c:-0})) -gt 0 ] || [ -z "$syn" ]; then
        n=$((${f:-0} + ${c:-0})); fail $((n > 0 ? n : 1)) "$t"
    fi
done

for t in $(ls tests/*.sh | sort); do
    log=$logs/$(basename "$t").log
    echo "== $t"
    bash "$t" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    if [ $rc -ne 0 ]; then fail 1 "$t"
    elif tail -1 "$log" | grep -qi skipped; then skipped=$((skipped + 1))
    else passed=$((passed + 1)); fi
done

if ! command -v python3 >/dev/null; then
    echo "== python/ skipped: no python3 here"; skipped=$((skipped + 2))
else
    echo "== python3 python/flash_steps.py (the listing needs no torch)"
    if python3 python/flash_steps.py >"$logs/flash_steps_list.txt" 2>&1; then
        grep -c "^  [0-9][0-9]*_" "$logs/flash_steps_list.txt" | sed 's/$/ steps listed/'
        passed=$((passed + 1))
    else
        cat "$logs/flash_steps_list.txt"; fail 1 python/flash_steps.py
    fi
    if ! python3 -c "import torch" 2>/dev/null; then
        echo "== tests/test_torch.py SKIPPED: python3 cannot import torch (pip install torch; the PyTorch door is tested where torch is)"
        skipped=$((skipped + 1))
    elif ! python3 -c "import pytest" 2>/dev/null; then
        echo "== tests/test_torch.py SKIPPED: pytest is not installed (python3 -m pip install pytest)"
        skipped=$((skipped + 1))
    else
        echo "== tests/test_torch.py"
        python3 -m pytest -q -rs tests/test_torch.py 2>&1 | tee "$logs/test_torch.log"
        rc=${PIPESTATUS[0]}
        last=$(tail -1 "$logs/test_torch.log")
        for k in passed skipped xfailed failed error; do
            v=$(grep -o "[0-9]* $k" <<<"$last" | cut -d' ' -f1)
            case $k in passed) passed=$((passed + ${v:-0}));; skipped|xfailed) skipped=$((skipped + ${v:-0}));;
                       failed|error) [ -n "$v" ] && fail "$v" tests/test_torch.py;; esac
        done
        [ $rc -eq 0 ] || [ -n "$(grep -o '[0-9]* \(failed\|error\)' <<<"$last")" ] || fail 1 tests/test_torch.py
    fi
fi

echo "== make test: $passed passed, $failed failed, $skipped skipped${failures:+ (failed:$failures)}"
[ $failed -eq 0 ]
