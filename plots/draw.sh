#!/usr/bin/env bash
# Draws every chart from the CSVs of one benchmark run:
#     plots/draw.sh RESULTS_DIR OUT_DIR        (e.g. plots/draw.sh bench/results/h200 plots/h200)
# Each plots/NAME.gp draws OUT_DIR/NAME.png (plots/_*.gp are shared pieces, not charts).
# RESULTS_DIR holds standard.csv, peers_standard.csv (the standard bf16 sweep), single_head.csv,
# peers_single_head.csv (the single-head fp32 shapes), check.csv (plus any check*.csv of a later
# check, e.g. check12.csv; never a check-<sha>*.csv), tiles.csv and tiles.log (step 03's tile
# sweep, its own run: tiles.log's first line names its commit), decode.csv and peers_decode.csv
# (the decode sweep; the chart's HBM line from meta.txt's hbm_peak_gbps; without either CSV the
# decode chart is skipped without a word), and meta.txt, all optional: a
# chart whose inputs are missing is skipped with a line on stderr (tiles.png and causal.png
# appear once a run has their rows), but a chart the inputs allow that does not come out is an
# error (exit status 1). The steps are read from the CSVs, so a new step shows up in every chart
# without a change to these scripts; the one fact about steps the scripts hold is which step runs
# an earlier step's forward kernel unchanged (forward_shared in _style.gp: 06 runs 05's, 13 runs
# 12's, 14 runs 13's where H_kv = H).
set -euo pipefail

die() { echo "draw.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: plots/draw.sh RESULTS_DIR OUT_DIR"
results=${1%/} out=${2%/}
plotdir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

command -v gnuplot >/dev/null 2>&1 \
  || die "gnuplot is not installed; install it (e.g. apt-get install gnuplot-nox) to draw the charts"
gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 \
  || die "this gnuplot has no pngcairo terminal; install a build with cairo (e.g. gnuplot-nox)"
[ -d "$results" ] || die "no results folder $results"
mkdir -p "$out"

# count FILE 'col=value col=a|b ...': how many rows of FILE match (0 if FILE is missing).
# The same key=value filter as rows() in _style.gp.
count() {
  [ -s "$1" ] || { echo 0; return; }
  awk -F, -v w="$2" 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; nw=split(w,W," "); next}
    {for(j=1;j<=nw;j++){split(W[j],kv,"="); if(index("|" kv[2] "|", "|" $c[kv[1]] "|")==0) next}; n++}
    END{print n+0}' "$1"
}
# meta KEY: the value of KEY=... in meta.txt (quotes and CRs dropped), empty if absent.
meta() {
  if [ -f "$results/meta.txt" ]; then
    awk -v k="$1" 'index($0, k "=") == 1 { v = substr($0, length(k) + 2); gsub(/[\r\047"]/, "", v); print v; exit }' "$results/meta.txt"
  fi
}

gpu=$(meta gpu)
if [ -z "$gpu" ]; then   # no meta.txt: take the GPU name from the first CSV that has one
  for f in standard single_head peers_standard peers_single_head; do
    [ -s "$results/$f.csv" ] && gpu=$(awk -F, 'NR==2{print $1; exit}' "$results/$f.csv" | tr -d "'\"") && break
  done
fi
gpu=${gpu:-unknown GPU}
date=$(meta date)
sha=$(meta git_sha)
# rows appended later from another run name it here (meta.txt's `later=`, e.g. step 13's rows)
later=$(meta later)
# attn check may run on a later commit than the sweeps: its log's first line names it
# every commit check.txt names (a log joined from several runs names each at its part's start)
check_sha=$(sed -n 's/^commit //p' "$results/check.txt" 2>/dev/null | awk '!seen[$0]++' | paste -sd/ - || true)
# the tile sweep is its own run (bench/tiles.sh): its log's first line names its commit
tiles_sha=$(sed -n '1s/^commit //p' "$results/tiles.log" 2>/dev/null || true)
# the single-head sweep may come from an earlier run than the standard one: its log says which
single_sha=$(sed -n '1s/^commit //p' "$results/single_head.log" 2>/dev/null || true)
single_date=$(sed -n '2s/^date //p' "$results/single_head.log" 2>/dev/null || true)
gpumem=$(meta gpu_mem_bytes); [[ "$gpumem" =~ ^[0-9]+$ ]] || gpumem=0
hbm=$(meta hbm_peak_gbps); [[ "$hbm" =~ ^[0-9]+$ ]] || hbm=0
vars="results='$results'; out='$out'; plotdir='$plotdir'; gpu='$gpu'; date='$date'; sha='$sha'; later='$later'; check_sha='$check_sha'; tiles_sha='$tiles_sha'; single_sha='$single_sha'; single_date='$single_date'; gpumem=$gpumem.0; hbm=$hbm.0"

# why_not NAME: empty if the inputs allow chart NAME, else the reason it is skipped.
why_not() {
  local b=$results/standard.csv p=$results/peers_standard.csv
  local sh=$results/single_head.csv psh=$results/peers_single_head.csv t=$results/tiles.csv
  local dc=$results/decode.csv pdc=$results/peers_decode.csv
  case $1 in
    forward|backward) [ -s "$b" ] || [ -s "$p" ] || { echo "no standard.csv or peers_standard.csv in $results"; return; } ;;
    hopper) if [ ! -s "$b" ] || [ ! -s "$p" ]; then echo "it needs both standard.csv and peers_standard.csv in $results"; return; fi ;;
    memory) [ -s "$b" ] || { echo "no standard.csv in $results"; return; } ;;
    ladder) if [ ! -s "$b" ] || [ ! -s "$p" ]; then echo "it needs both standard.csv and peers_standard.csv in $results"; return; fi ;;
    accuracy) [ -s "$results/check.csv" ] || { echo "no check.csv in $results"; return; } ;;
    single_head) [ -s "$sh" ] || [ -s "$psh" ] || { echo "no single_head.csv or peers_single_head.csv in $results"; return; } ;;
    causal) [ -s "$b" ] || { echo "no standard.csv in $results"; return; } ;;
    tiles) [ -s "$t" ] || { echo "no tiles.csv in $results (the tile sweep has not been run)"; return; } ;;
    decode) [ -s "$dc" ] || [ -s "$pdc" ] || { echo "-"; return; } ;;   # not run: skipped silently
  esac
  case $1 in
    forward|backward)
      local pass=fwd; [ "$1" = backward ] && pass=bwd
      [ $(( $(count "$b" "status=ok pass=$pass dtype=bf16") + $(count "$p" "status=ok pass=$pass dtype=bf16") )) -gt 0 ] \
        || echo "no bf16 $pass rows with status ok in standard.csv or peers_standard.csv" ;;
    hopper)
      [ "$(count "$p" "step=sdpa_cudnn status=ok pass=fwd dtype=bf16")" != 0 ] \
        || echo "no sdpa_cudnn forward rows in peers_standard.csv (the reference)" ;;
    ladder)
      if [ "$(count "$b" "status=ok pass=fwd dtype=bf16 batch=4 heads=8 seq_q=4096")" = 0 ]; then
        echo "no bf16 forward rows at N=4096 in standard.csv"
      elif [ "$(count "$p" "step=sdpa_flash status=ok pass=fwd dtype=bf16 batch=4 heads=8 seq_q=4096")" = 0 ]; then
        echo "no sdpa_flash forward rows at N=4096 in peers_standard.csv (the 100% reference)"
      fi ;;
    memory)
      [ "$(count "$b" "status=ok|oom pass=fwd dtype=bf16 head_dim=128 causal=0")" != 0 ] \
        || echo "no bf16 forward D=128 non-causal rows in standard.csv" ;;
    accuracy)
      [ "$(count "$results/check.csv" "verdict=PASS|FAIL|XFAIL|XPASS")" != 0 ] \
        || echo "no measured rows in check.csv" ;;
    single_head)
      [ $(( $(count "$sh" "status=ok|xfail dtype=fp32") + $(count "$psh" "status=ok dtype=fp32") )) -gt 0 ] \
        || echo "no fp32 rows with status ok in single_head.csv or peers_single_head.csv" ;;
    causal)
      # steps 03 and later: the ones with tiles sized for the tensor cores (05 skips the hidden tiles)
      awk -F, 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next}
        $c["status"]=="ok" && $c["pass"]=="fwd" && $c["causal"]==1 && $c["step"] ~ /^[0-9][0-9]_/ && substr($c["step"], 1, 2) + 0 >= 3 {n++}
        END{exit !n}' "$b" \
        || echo "no causal forward rows of step 03 or later in standard.csv" ;;
    tiles)
      [ "$(count "$t" "status=ok")" != 0 ] || echo "no rows with status ok in tiles.csv" ;;
    decode)
      [ $(( $(count "$dc" "status=ok pass=fwd heads_kv=8 seq_q=1") + $(count "$pdc" "status=ok pass=fwd heads_kv=8 seq_q=1") )) -gt 0 ] \
        || echo "no forward rows with status ok and 8 K/V heads in decode.csv or peers_decode.csv" ;;
  esac
}

drawn=0
for gp in "$plotdir"/*.gp; do
  name=$(basename "$gp" .gp)
  case $name in _*) continue ;; esac
  reason=$(why_not "$name")
  [ "$reason" = "-" ] && continue   # a sweep this run did not make (decode): no line
  if [ -n "$reason" ]; then
    echo "draw.sh: skipping $name.png: $reason" >&2
    continue
  fi
  rm -f "$out/$name.png"
  if ! gnuplot -e "$vars" "$gp"; then
    die "gnuplot failed on plots/$name.gp (see above); $out/$name.png not drawn"
  fi
  [ -s "$out/$name.png" ] || die "plots/$name.gp ran but $out/$name.png was not produced"
  echo "draw.sh: drew $out/$name.png"
  drawn=$((drawn + 1))
done
[ "$drawn" -gt 0 ] || echo "draw.sh: no chart drawn: $results has none of the inputs" >&2
