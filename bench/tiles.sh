#!/usr/bin/env bash
# The tile sweep of step 03 (make tiles builds the variants first): each (Br, Bc, warps, stages)
# build of steps/03_larger_tiles/attention.cu timed at B=4, H=8, N=4096, D=64 and 128, bf16,
# non-causal, each spot-checked against step 00 on the same inputs (attn run does that).
# A configuration that cannot exist (rows per warp not a multiple of 16, too much shared
# memory) is a row with its reason, not a gap. Registers and spills come from ptxas (sm_90).
#   bench/tiles.sh OUT.csv > OUT.log
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/tiles.sh OUT.csv}
[ -d build/tiles ] || { echo "bench/tiles.sh: no build/tiles; run make tiles first" >&2; exit 2; }
echo "d,br,bc,warps,stages,status,regs,spills,smem_bytes,ms_median,tflops" >"$out"
# the log (stdout) names the commit first, for the tile chart's stamp
echo "commit ${ATTN_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
status=0
for dir in build/tiles/br*_bc*_w*_s*; do
    cfg=$(basename "$dir")
    read -r br bc w st <<<"$(sed 's/br\([0-9]*\)_bc\([0-9]*\)_w\([0-9]*\)_s\([0-9]*\)/\1 \2 \3 \4/' <<<"$cfg")"
    ln -sf "$PWD/build/steps/00_materialized.so" "$dir/00_materialized.so"
    for d in 64 128; do
        # ptxas, sm_90, the kernel instantiated for this D: registers, spill stores, static smem
        res=$(awk -v d="$d" '
            /Compiling entry function/ { take = ($0 ~ "sm_90" && $0 ~ ("attention_fwd.*ILi" d "E")) }
            take && /spill stores/ { for (i = 1; i <= NF; i++) if ($(i+1) == "bytes" && $(i+2) == "spill" && $(i+3) == "stores,") sp = $i }
            take && /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($i == "Used") r = $(i+1); take = 0 }
            END { printf "%s %s", (r == "" ? "-" : r), (sp == "" ? "-" : sp) }' "$dir/ptxas.txt")
        read -r regs spills <<<"$res"
        log=$(ATTN_STEPS_DIR=$dir build/attn run --step 03 --shape 4,8,4096,4096,$d --dtype bf16 --reps 10 2>&1)
        rc=$?
        ms=$(sed -n 's/^time *\([0-9.]*\) ms median.*/\1/p' <<<"$log")
        tf=$(sed -n 's/^rate *\([0-9.]*\) TFLOP\/s.*/\1/p' <<<"$log")
        smem=$(sed -n 's/.*smem_bytes=\([0-9]*\).*/\1/p' <<<"$log" | head -1)
        if [ $rc -eq 0 ] && [ -n "$tf" ]; then st_="ok"
        elif grep -q "does not support" <<<"$log"; then
            st_="unsupported: $(sed -n 's/.*does not support[^:]*: //p' <<<"$log" | head -1 | tr ',' ';')"
        else st_="failed: $(tail -n 1 <<<"$log" | tr ',' ';')"; status=1; fi
        echo "$d,$br,$bc,$w,$st,$st_,$regs,$spills,${smem:-},${ms:-},${tf:-}" | tee -a "$out"
    done
done
exit $status
