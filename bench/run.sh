#!/usr/bin/env bash
# make bench: on a machine with a GPU, check every step, run every sweep of bench/sweeps.txt for
# every step and for PyTorch SDPA's backends, and draw the charts. It writes only
# bench/results/<gpu>/ and plots/<gpu>/ (<gpu> from `attn info`, e.g. h200); it never touches the
# README (its table changes only on an explicit `make readme`). Without a GPU, it redraws the
# charts of every committed results folder and says so.
#   bench/run.sh            results into bench/results/<gpu>/, charts into plots/<gpu>/
#   bench/run.sh DIR        results into DIR, no charts (what the device runs use)
set -uo pipefail
cd "$(dirname "$0")/.."

draw() {   # draw RESULTS_DIR OUT_DIR, if gnuplot is here
    if command -v gnuplot >/dev/null; then
        plots/draw.sh "$1" "$2"
    else
        echo "make bench: no gnuplot here; the results are in $1, draw the charts with plots/draw.sh $1 $2 where gnuplot is" >&2
    fi
}

if ! info=$(build/attn info 2>&1); then
    echo "make bench: ${info#attn info: }; redrawing the charts from the committed results instead"
    status=0
    for dir in bench/results/*/; do
        dir=${dir%/}
        draw "$dir" "plots/$(basename "$dir")" || status=1
    done
    exit $status
fi
slug=$(sed -n 's/^slug=//p' <<<"$info")
out=${1:-bench/results/$slug}
mkdir -p "$out"
sha=${ATTN_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
    echo "$info"
    echo "git_sha=$sha"
    echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "torch=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
} >"$out/meta.txt"
status=0
step() { echo "== $*" >&2; "$@" || status=1; }

{ echo "commit $sha"; build/attn check --csv "$out/check.csv"; } >"$out/check.txt" 2>&1 || status=1
tail -n 12 "$out/check.txt"
# The sweeps, by name, in the order bench/sweeps.txt first names them: NAME.csv and peers_NAME.csv.
sweeps=$(awk '{ sub(/#.*/, "") } NF && !seen[$1]++ { print $1 }' bench/sweeps.txt)
for sweep in $sweeps; do
    step build/attn bench --sweep "$sweep" --out "$out/$sweep.csv"
done
if command -v python3 >/dev/null; then
    for sweep in $sweeps; do
        step python3 bench/peer_sdpa.py --sweep "$sweep" --out "$out/peers_$sweep.csv"
    done
else
    echo "make bench: no python3 here; the SDPA peers are skipped" >&2
fi
if [ $# -eq 0 ]; then
    draw "$out" "plots/$slug" || status=1
fi
exit $status
