#!/usr/bin/env bash
# Regenerates the ladder table of the README from one benchmark run (`make readme`; `make plots`
# and `make bench` never touch the README):
#     plots/readme_table.sh RESULTS_DIR README.md      (e.g. bench/results/h200 README.md)
# Replaces, in place, the lines between the marker lines "<!-- ladder:begin -->" and
# "<!-- ladder:end -->" and leaves every other byte of README.md as it was. Between them: a
# sentence naming the GPU, the table, and where the numbers come from. The table: forward
# TFLOP/s at N = 4096 (bf16, B=4, H=8) from standard.csv (one row per step found there, in step
# order), then the peers from peers_standard.csv (SDPA's backends, FlashAttention-4 as fa4); "% FA2" is 100 × TFLOP/s / sdpa_flash's at
# the same (D, causal). awk and POSIX tools only (no Python on the CI machine).
set -euo pipefail

die() { echo "readme_table.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: plots/readme_table.sh RESULTS_DIR README.md"
results=${1%/} readme=$2
begin='<!-- ladder:begin -->' end='<!-- ladder:end -->'

[ -s "$results/standard.csv" ] || die "no $results/standard.csv to make the table from"
[ -f "$readme" ] || die "no $readme"

# meta KEY: the value of KEY=... in meta.txt, empty if absent.
meta() {
  if [ -f "$results/meta.txt" ]; then
    awk -v k="$1" 'index($0, k "=") == 1 { v = substr($0, length(k) + 2); sub(/\r$/, "", v); print v; exit }' "$results/meta.txt"
  fi
}
gpu=$(meta gpu); gpu=${gpu:-$(awk -F, 'NR==2{print $1; exit}' "$results/standard.csv")}
date=$(meta date) sha=$(meta git_sha) later=$(meta later) cuda=$(meta cuda_runtime) driver=$(meta driver) torch=$(meta torch)
peers=$results/peers_standard.csv; [ -s "$peers" ] || peers=/dev/null

# The table. Columns are found by header name; the last row of a configuration wins.
table_for() {   # table_for fwd|bwd
  awk -F, -v n=4096 -v pass="$1" '
  FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $c["status"] != "ok" || $c["pass"] != pass || $c["dtype"] != "bf16" || $c["batch"] != 4 ||
  $c["heads"] != 8 || $c["seq_q"] != n || $c["seq_k"] != n { next }
  {
    s = $c["step"]; k = ($c["head_dim"] == 64 ? 1 : $c["head_dim"] == 128 ? 2 : 0)
    if (!k) next
    k += 2 * ($c["causal"] == 1)
    tf[s, k] = $c["tflops"]
    if (!(s in seen)) { seen[s] = 1; if (s ~ /^sdpa_/ || s == "fa4") peer[s] = 1; else steps[++ns] = s }
  }
  END {
    # our steps in step order (insertion sort: POSIX awk has no sort), then the peers
    for (i = 2; i <= ns; i++) for (j = i; j > 1 && steps[j-1] > steps[j]; j--) { t = steps[j]; steps[j] = steps[j-1]; steps[j-1] = t }
    m = split("sdpa_flash sdpa_cudnn fa4 sdpa_efficient sdpa_math", P, " ")
    for (i = 1; i <= m; i++) if (P[i] in peer) steps[++ns] = P[i]
    print "| step | D=64 | % FA2 | D=128 | % FA2 | D=64 causal | % FA2 | D=128 causal | % FA2 |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= ns; i++) {
      s = steps[i]; line = "| " s " |"
      for (k = 1; k <= 4; k++) {
        v = ((s, k) in tf) ? tf[s, k] : ""; r = (("sdpa_flash", k) in tf) ? tf["sdpa_flash", k] : ""
        line = line " " (v != "" ? sprintf("%.1f", v) : "–") " | " (v != "" && r > 0 ? sprintf("%.0f", 100 * v / r) : "–") " |"
      }
      print line
    }
  }' "$results/standard.csv" "$peers"
}
table=$(table_for fwd)
btable=$(table_for bwd)

where="bench/results/$(basename "$results")/"
header="Forward TFLOP/s on ${gpu:-an unknown GPU} at N = 4096 (the standard bf16 sweep: batch 4, 8 heads), and each as a % of PyTorch SDPA's FlashAttention-2 backend at the same shape; fa4 is FlashAttention-4 (its sm90 kernels)."
bheader="Backward TFLOP/s (2.5 × the forward's FLOPs) at the same shapes, for the steps that have a backward, as a % of the FlashAttention-2 backend's backward."
footer="Measured on ${gpu:-an unknown GPU}, ${date:-unknown date}${sha:+, commit $sha}${cuda:+, CUDA $cuda}${driver:+, driver $driver}${torch:+, torch $torch}${later:+; $later} ($where; its README names the rows that a later run replaced)."

# Splice: the lines up to and including the begin marker, the table, the lines from the end
# marker on. Marker lines match with trailing blanks or a CR ignored.
tmp=$(mktemp "${readme}.XXXXXX")
trap 'rm -f "$tmp" "$tmp.body"' EXIT
printf '\n%s\n\n%s\n\n%s\n\n%s\n\n%s\n\n' "$header" "$table" "$bheader" "$btable" "$footer" > "$tmp.body"
if ! awk -v begin="$begin" -v end="$end" -v body="$tmp.body" '
    { l = $0; sub(/[ \t\r]+$/, "", l) }
    l == end   { ne++; if (!nb) bad = 1; skip = 0 }
    !skip      { print }
    l == begin { nb++; while ((getline b < body) > 0) print b; skip = 1 }
    END { if (nb != 1 || ne != 1 || bad) { printf "found %d begin and %d end markers%s\n", nb, ne, bad ? ", end first" : "" > "/dev/stderr"; exit 1 } }
  ' "$readme" > "$tmp"; then
  die "$readme needs one line '$begin' followed by one line '$end'"
fi
# awk ends the last line with a newline; if README.md had none there, take it off again.
if [ -n "$(tail -c 1 "$readme")" ]; then
  printf '%s' "$(cat "$tmp")" > "$tmp.body" && mv "$tmp.body" "$tmp"
fi
cat "$tmp" > "$readme"    # in place: keeps the file's mode, owner and links
echo "readme_table.sh: updated the ladder table in $readme from $results/"
