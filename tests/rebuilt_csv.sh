#!/usr/bin/env bash
# A CSV rebuilt from a progress log must come out of that log again, byte for byte: the committed
# bench/results/h200/run-62ca8dd/standard.csv was rebuilt by bench/log_to_csv.py from bench.log
# beside it (the CSV itself did not come back from the GPU machine). make test runs this; it needs
# python3, not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
r=bench/results/h200/run-62ca8dd
tmp=$(mktemp /tmp/attn-rebuilt-XXXXXX.csv)
trap 'rm -f "$tmp"' EXIT
python3 bench/log_to_csv.py --sweep standard --log "$r/bench.log" --gpu "NVIDIA H200" \
    --workspace-from bench/results/h200/sweep-2350ab1/standard.csv --out "$tmp" 2>/dev/null
if ! cmp -s "$tmp" "$r/standard.csv"; then
    echo "tests/rebuilt_csv.sh: $r/standard.csv is not what bench/log_to_csv.py makes of $r/bench.log"
    diff "$tmp" "$r/standard.csv" | head -5
    exit 1
fi
echo "tests/rebuilt_csv.sh: $r/standard.csv is what bench/log_to_csv.py rebuilds from $r/bench.log ($(($(wc -l <"$tmp") - 1)) rows)"
