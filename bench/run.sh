#!/usr/bin/env bash
# make bench: on a machine with a GPU, check every step, run both sweeps for every step and for
# PyTorch SDPA's backends, and draw the charts. Without a GPU, redraw the charts from the
# committed results and say so.
#   bench/run.sh            results into bench/results/<gpu>/, charts into plots/<gpu>/
#   bench/run.sh DIR        results into DIR, no charts (what the device runs use)
set -uo pipefail
cd "$(dirname "$0")/.."
if ! info=$(build/attn info 2>&1); then
    echo "make bench: ${info#attn: }; redrawing the charts from the committed results instead"
    exec make --no-print-directory plots
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
step build/attn bench --sweep blog --out "$out/blog.csv"
step build/attn bench --sweep seed1 --out "$out/seed1.csv"
if command -v python3 >/dev/null; then
    step python3 bench/peer_sdpa.py --sweep blog --out "$out/peers_blog.csv"
    step python3 bench/peer_sdpa.py --sweep seed1 --out "$out/peers_seed1.csv"
else
    echo "make bench: no python3 here; the SDPA peers are skipped" >&2
fi
if [ $# -eq 0 ]; then
    if command -v gnuplot >/dev/null; then
        make --no-print-directory plots GPU="$slug" || status=1
    else
        echo "make bench: no gnuplot here; the results are in $out, draw the charts with make plots GPU=$slug where gnuplot is" >&2
    fi
fi
exit $status
