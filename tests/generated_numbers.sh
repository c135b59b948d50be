#!/usr/bin/env bash
# The numbers the README and the notes quote from the committed results are generated from them
# (tools/gen_numbers.py; `make readme` rewrites them): each must match what bench/results/h200/
# gives, and a deliberately stale one must fail the check. make test runs this; it needs python3,
# not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v python3 >/dev/null; then
    echo "tests/generated_numbers.sh skipped: no python3 here"
    exit 0
fi
files=(README.md notes/*.md)
python3 tools/gen_numbers.py --check "${files[@]}" ||
    { echo "tests/generated_numbers.sh: FAILED: a quoted number is stale against bench/results/h200 (make readme rewrites them)"; exit 1; }
# The check must see a stale number: a copy of the first of those files that quotes one, its first
# generated number changed.
tmp=$(mktemp -d /tmp/attn-numbers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
first=$(grep -l -- '<!-- n:' "${files[@]}" | head -1)
[ -n "$first" ] || { echo "tests/generated_numbers.sh: FAILED: no generated number in README.md or notes/"; exit 1; }
sed '0,/<!-- n:[^>]*-->[^<]*<!-- \/n -->/s//<!-- n:pass 00 -->1<!-- \/n -->/' "$first" >"$tmp/copy.md"
if python3 tools/gen_numbers.py --check "$tmp/copy.md" >"$tmp/out" 2>&1; then
    echo "tests/generated_numbers.sh: FAILED: a stale number passed the check:"; cat "$tmp/out"; exit 1
fi
grep -q "says '1', the results give" "$tmp/out" ||
    { echo "tests/generated_numbers.sh: FAILED: the stale number was not named:"; cat "$tmp/out"; exit 1; }
echo "tests/generated_numbers.sh: OK (a stale copy fails: $(head -1 "$tmp/out" | sed 's|^[^:]*:[0-9]*: ||'))"
