#!/usr/bin/env bash
# make bench: on a machine with a GPU, check every step, run every sweep of bench/sweeps.txt for
# every step and for PyTorch SDPA's backends, and draw the charts. It writes only
# bench/results/<gpu>/ and plots/<gpu>/ (<gpu> from `attn info`, e.g. h200); it never touches the
# README (its table changes only on an explicit `make readme`). Without a GPU, it redraws the
# charts of every committed results folder and says so.
#   bench/run.sh                 results into bench/results/<gpu>/, charts into plots/<gpu>/
#   bench/run.sh DIR             results into DIR, no charts (what the device runs use)
#   bench/run.sh --quick [DIR]   (make bench QUICK=1) a first reproduction in minutes: only the
#                                lines of each sweep marked quick (attn bench --quick, then
#                                bench/peer_sdpa.py --quick), no attn check (make check does it);
#                                results into out/quick/<gpu>/ (or DIR), charts into
#                                out/quick/<gpu>/plots/ (none with DIR); the committed results
#                                and charts are left alone. Charts whose rows a quick run does
#                                not make (accuracy, without check.csv) are skipped, and say so.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

quick=0
if [ "${1:-}" = --quick ]; then
    quick=1
    shift
fi
case ${1:-} in
-*) echo "bench/run.sh: unknown option $1 (usage: bench/run.sh [--quick] [DIR])" >&2; exit 2 ;;
esac

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
if [ $quick = 1 ]; then
    out=${1:-out/quick/$slug}
    charts=$out/plots
    quick_flag=--quick
else
    out=${1:-bench/results/$slug}
    charts=plots/$slug
    quick_flag=
fi
mkdir -p "$out"
sha=${ATTN_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
    echo "$info"
    echo "git_sha=$sha"
    echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "torch=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
    if [ $quick = 1 ]; then echo "quick=1"; fi
} >"$out/meta.txt"
# single_head.log names an older run of the single-head sweep alone (its chart's stamp); this
# run makes every sweep anew, so meta.txt is theirs
rm -f "$out/single_head.log"
status=0
step() { echo "== $*" >&2; "$@" || status=1; }

if [ $quick = 0 ]; then
    { echo "commit $sha"; build/attn check --csv "$out/check.csv"; } >"$out/check.txt" 2>&1 || status=1
    tail -n 12 "$out/check.txt"
fi
# The sweeps, by name, in the order bench/sweeps.txt first names them: NAME.csv and peers_NAME.csv.
# The decode sweep (GB of K and V per shape) runs the decode step and the general forward beside
# it (steps 14 and 15), not every step: the scalar steps would take most of an hour there.
sweeps=$(awk '{ sub(/#.*/, "") } NF && !seen[$1]++ { print $1 }' bench/sweeps.txt)
for sweep in $sweeps; do
    only=()
    [ "$sweep" = decode ] && only=(--steps "$(build/attn list | awk '$1 ~ /^1[45]_/ { printf "%s%s", n++ ? "," : "", substr($1, 1, 2) }')")
    [ "${only[1]:-x}" = "" ] && continue   # neither step built
    step build/attn bench --sweep "$sweep" $quick_flag "${only[@]}" --out "$out/$sweep.csv"
done
if command -v python3 >/dev/null; then
    for sweep in $sweeps; do
        step python3 bench/peer_sdpa.py --sweep "$sweep" $quick_flag --out "$out/peers_$sweep.csv"
    done
else
    echo "make bench: no python3 here; the SDPA peers are skipped" >&2
fi
# The bars as the README and notes 12, 13 and 15 quote them: the top forward step (12), the Hopper
# backward (13) and the decode step (15) through the Python door beside the peers, on the same
# inputs, each shape's calls timed in turn launch by launch (--lockstep), five rounds
# (interleaved_fwd.csv, interleaved_bwd.csv, interleaved_decode.csv;
# bench/experiments/tools/interleaved.py prints their ratios). Not in a quick run.
if [ $quick = 0 ] && command -v python3 >/dev/null; then
    one_pass=$(mktemp)
    for pass in fwd bwd; do
        top=12
        [ $pass = bwd ] && top=13
        sed "s/fwd,bwd/$pass/" bench/sweeps.txt >"$one_pass"
        step env ATTN_SWEEPS_FILE="$one_pass" python3 bench/peer_sdpa.py --sweep bars --backends cudnn,fa4 \
            --steps $top --lockstep --rounds 5 --out "$out/interleaved_$pass.csv"
    done
    rm -f "$one_pass"
    step python3 bench/peer_sdpa.py --sweep decode --quick --backends flash,cudnn,fa4 --steps 15 \
        --lockstep --rounds 5 --out "$out/interleaved_decode.csv"
fi
if [ $# -eq 0 ]; then
    draw "$out" "$charts" || status=1
    if [ $quick = 1 ]; then echo "make bench QUICK=1: results in $out, charts in $charts" >&2; fi
fi
exit $status
