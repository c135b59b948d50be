#!/usr/bin/env bash
# Step 15 (decode) on the H200, one call. First run 2026-12-01 (tma_run/: the step then had the TMA
# loader; cp_async_run/: the step as it is, the six bar shapes, the checks and the Python door).
# Here (nvcc, no GPU):  bench/experiments/15_decode/run.sh build
#   make, then the variants of step 15 below, each a build of steps/15_decode/attention.cu
#   with build-time knobs (the step's header lists them), into build/v15/NAME.so, their ptxas
#   registers and spills in build/v15/ptxas.txt, and build/v15/ab (bench/experiments/tools/ab.c).
# On the H200, carry ["build", ".device-libs", ".git-sha"]:
#   export LD_LIBRARY_PATH=$PWD/.device-libs; bash bench/experiments/15_decode/run.sh run $OUT
# PARTS="check bench peers variants" (the default: all, in that order) picks parts; each runs under
# its own timeout so that the call stays under 300 s (about 280 s in all when every part runs to
# its limit; a part cut short says so in log.txt and keeps what it wrote: the decode sweep's
# biggest shapes come last, so a cut bench loses the B = 8 points at 64k-128k keys first; rerun
# with PARTS=bench, or PARTS="bench peers", in a second call):
#   check     65 s  attn check --steps 14,15 --decode --forward: the grid's cases of at most 16
#                   queries (step 15's decode shapes and the older few-query ones), all four input
#                   kinds, step 14's forward (the general one) beside step 15's; meanwhile, in
#                   the background, bench/sanitize.sh 15 (memcheck, racecheck, synccheck on six
#                   small decode shapes: one split and many, 16/32/64-row tiles, two row tiles)
#   bench    150 s  attn bench --sweep decode --steps 15 --reps 5 (every row checked against step
#                   00 on the same inputs; the big shapes' random inputs take most of the time)
#   peers     45 s  bench/peer_sdpa.py --sweep decode --backends cudnn,flash,fa4 (fa4 where
#                   installed; SDPA with enable_gqa=True where H_kv < H)
#   variants  30 s  build/v15/ab: the variants below against each other, launch by launch, at
#                   four shapes (GQA B = 8 at 32k, one long 128k cache, 4 queries, B = 1 at 8k), 2
#                   rounds of 10, GB/s in the last column
# The variants (build-time knobs; the default is Bc = 64 keys at D = 128 / 128 at D = 64, 3
# stages, two blocks per SM, splits by choose_splits):
#   base      the step as committed
#   sp1       DECODE_SPLITS=1: no split-KV (what splitting the keys buys)
#   bps1      DECODE_BLOCKS_PER_SM=1: splits chosen for one block per SM (half as many)
#   bps4      DECODE_BLOCKS_PER_SM=4: twice as many splits, two waves of shorter blocks
#   s2        2 stages (one tile in flight while one is computed; 64 KB + Q, registers capped so
#             that 3 blocks fit an SM)
#   s4        4 stages (128 KB + Q: one block per SM, 3 tiles in flight)
#   bc128s2   Bc = 128 at both head dims, 2 stages (64 KB tiles at D = 128)
#   bc64s6    Bc = 64 at both head dims, 6 stages (192 KB: one block per SM, 5 tiles in flight)
#   tma       K and V by TMA (one thread issues each tile on an mbarrier, the tiles in its 128-byte
#             swizzle) instead of cp.async: the step as first written, tma.patch here (5-6 %
#             slower in the first run, 2026-12-01: tma_run/, cp_async_run/)
# OUT receives (7 files): meta.txt (attn info, with hbm_peak_gbps, the commit, driver, torch),
# decode.csv and peers_decode.csv (the sweep, for plots/draw.sh: copy them with meta.txt into
# bench/results/h200/), check_decode.csv (attn check's rows), variants.csv (ab), summary.txt (the
# six bar shapes: step 15's GB/s, the best peer's, the ratio, the 4,300 GB/s bar where K and V
# exceed 1e9 bytes: all but the one long cache, whose K and V are 0.54 GB; the other three GQA
# shapes hold exactly 2^30 bytes, 1.07e9; and the check's and the sanitizer's verdicts),
# logs.tar.gz (log.txt, check.txt,
# sanitize.txt, bench.log, peers.log, variants.log, ptxas.txt).
set -u
cd "$(dirname "$0")/../../.."
X=bench/experiments/15_decode
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
# step 15's flags (make step-flags STEP=15)
NV="$NVCC -O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC,-Wall,-Wextra,-Werror -Werror all-warnings
    -cudart shared -Xlinker -rpath=/usr/local/cuda/lib64 -Icommon -gencode arch=compute_90a,code=sm_90a"
VARIANTS=(
    "base:"
    "sp1:-DDECODE_SPLITS=1"
    "bps1:-DDECODE_BLOCKS_PER_SM=1"
    "bps4:-DDECODE_BLOCKS_PER_SM=4"
    "s2:-DDECODE_BC=64 -DDECODE_STAGES=2 -DDECODE_MIN_BLOCKS=3"
    "s4:-DDECODE_BC=64 -DDECODE_STAGES=4"
    "bc128s2:-DDECODE_BC=128 -DDECODE_STAGES=2"
    "bc64s6:-DDECODE_BC=64 -DDECODE_STAGES=6"
    "tma:"
)
# Careful: s2 and s4 set Bc = 64 at D = 64 as well (the default there is 128); the D = 64 bar shape
# is not among the variants' shapes.
AB_SHAPES="--shape 8,32,1,32768,128,8 --shape 1,32,1,131072,128,8 --shape 8,32,4,32768,128,8 --shape 1,32,1,8192,128,8"
SIX="8,32,1,32768,128,32 8,32,1,32768,64,32 8,32,1,32768,128,8 64,32,1,4096,128,8 1,32,1,131072,128,8 8,32,4,32768,128,8"

case ${1:-} in
build)
    set -e -o pipefail
    make -s
    mkdir -p build/v15
    : >build/v15/ptxas.txt
    patch -s -o build/v15/tma.cu steps/15_decode/attention.cu $X/tma.patch
    for v in "${VARIANTS[@]}"; do
        name=${v%%:*} flags=${v#*:} src=steps/15_decode/attention.cu
        [ "$name" = tma ] && src=build/v15/tma.cu
        echo "== $name ($flags)" >>build/v15/ptxas.txt
        # shellcheck disable=SC2086
        $NV -Xptxas -v $flags -o build/v15/$name.so $src 2>&1 |
            awk '/Compiling entry function/ { k = $0; sub(/.*function .[^ ]*_Z[0-9]+/, "", k);
                                               sub(/EEv.*/, "", k); sub(/ILi/, "<", k); gsub(/ELi|ELb/, ",", k);
                                               gsub(/Li|Lb/, "", k); next }
                 /spill stores/ { sp = $5 " B spilled" }
                 /Used [0-9]+ registers/ { print "  " k ">: " $5 " registers, " sp }' \
                >>build/v15/ptxas.txt
    done
    cat build/v15/ptxas.txt
    gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icommon -I/usr/local/cuda/include -o build/v15/ab \
        bench/experiments/tools/ab.c build/libharness.a -L/usr/local/cuda/lib64 \
        -Wl,-rpath,/usr/local/cuda/lib64 -lcudart -ldl -lm
    du -sh build
    ;;
run)
    out=${2:?usage: run.sh run OUT}
    mkdir -p "$out"
    tmp=$(mktemp -d)
    log=$tmp/log.txt
    say() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$log" >&2; }
    part() {   # part NAME SECONDS CMD...: runs CMD under a timeout, says how it ended
        local name=$1 secs=$2
        shift 2
        local t0=$SECONDS
        timeout --signal=INT --kill-after=5 "$secs" "$@"
        local rc=$?
        case $rc in
        124 | 130 | 137) say "$name: cut at its ${secs} s limit (rc $rc); what it wrote is kept" ;;
        *) say "$name: rc $rc in $((SECONDS - t0)) s" ;;
        esac
        return 0
    }
    [ -f .git-sha ] && export ATTN_GIT_SHA=$(cat .git-sha)
    sha=${ATTN_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
    {
        build/attn info
        echo "git_sha=$sha"
        echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
        echo "torch=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
    } >"$out/meta.txt" 2>>"$log"
    say "commit $sha; $(grep -E '^(gpu|hbm_peak_gbps)=' "$out/meta.txt" | paste -sd' ')"
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv >>"$log" 2>&1
    [ -x build/v15/ab ] || say "no build/v15/ab: run bench/experiments/15_decode/run.sh build here first (the variants part will fail)"
    for p in ${PARTS:-check bench peers variants}; do
        case $p in
        check)
            say "check: attn check --steps 14,15 --decode --forward; bench/sanitize.sh 15 in the background"
            TOOLS="memcheck racecheck synccheck" timeout --kill-after=5 65 bench/sanitize.sh 15 \
                >"$tmp/sanitize.txt" 2>&1 &
            san=$!
            part check 65 build/attn check --steps 14,15 --decode --forward --csv "$out/check_decode.csv" \
                >"$tmp/check.txt" 2>&1
            wait $san
            say "sanitize: rc $? ($(grep -c 'rc 0;' "$tmp/sanitize.txt") runs clean of $(grep -c '^step ' "$tmp/sanitize.txt"))"
            tail -n 8 "$tmp/check.txt" | tee -a "$log" >&2
            ;;
        bench)
            say "bench: attn bench --sweep decode --steps 15 --reps 5"
            part bench 150 build/attn bench --sweep decode --steps 15 --reps 5 \
                --out "$out/decode.csv" 2>"$tmp/bench.log"
            ;;
        peers)
            say "peers: bench/peer_sdpa.py --sweep decode --backends cudnn,flash,fa4"
            part peers 45 python3 bench/peer_sdpa.py --sweep decode --backends cudnn,flash,fa4 \
                --out "$out/peers_decode.csv" 2>"$tmp/peers.log"
            ;;
        variants)
            say "variants: ab, $(echo "${VARIANTS[@]}" | tr ' ' '\n' | grep -c :) builds"
            vs=""
            for v in "${VARIANTS[@]}"; do vs="$vs build/v15/${v%%:*}.so"; done
            # shellcheck disable=SC2086
            part variants 30 build/v15/ab --rounds 2 --reps 10 $AB_SHAPES $vs \
                >"$out/variants.csv" 2>"$tmp/variants.log"
            ;;
        *) say "unknown part $p (check bench peers variants)" ;;
        esac
    done
    # summary: the six bar shapes, step 15 against the best peer, and the 90 % bar over 1 GB
    {
        echo "decode bars (GB/s of K and V; HBM peak $(sed -n 's/^hbm_peak_gbps=//p' "$out/meta.txt") GB/s by attn info)"
        awk -F, -v six="$SIX" '
            BEGIN { n = split(six, S, " "); for (i = 1; i <= n; i++) want[S[i]] = i }
            FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            $c["status"] == "ok" && $c["gbps"] != "" {
                key = $c["batch"] "," $c["heads"] "," $c["seq_q"] "," $c["seq_k"] "," $c["head_dim"] "," $c["heads_kv"]
                if (!(key in want)) next
                s = $c["step"]
                if (s ~ /^15_/) ours[key] = $c["gbps"]
                else if ($c["gbps"] + 0 > best[key] + 0) { best[key] = $c["gbps"]; who[key] = s }
            }
            END {
                printf "%-22s %10s %10s %-12s %7s %s\n", "B,H,Nq,Nk,D,H_kv", "step 15", "best peer", "(which)", "ratio", "bars"
                for (i = 1; i <= n; i++) {
                    k = S[i]; split(k, f, ",")
                    gb = 2 * f[1] * f[6] * f[4] * f[5] * 2 / 1e9
                    r = (k in ours) && best[k] > 0 ? ours[k] / best[k] : 0
                    bar = (k in ours) ? (r >= 1 ? ">= best peer" : "BELOW best peer") : "not measured"
                    if (gb > 1 && (k in ours)) bar = bar (ours[k] >= 4300 ? ", >= 4300" : ", BELOW 4300")
                    o = (k in ours) ? ours[k] : "-"
                    p = (best[k] > 0) ? best[k] : "-"
                    q = (r > 0) ? sprintf("%.3f", r) : "-"
                    printf "%-22s %10s %10s %-12s %7s %s\n", k, o, p, who[k], q, bar
                }
            }' "$out/decode.csv" "$out/peers_decode.csv" 2>/dev/null
        echo
        echo "check: $(grep -E '^(OK|FAILED):' "$tmp/check.txt" 2>/dev/null || echo 'no summary (cut, or not run)')"
        grep -E '^1[45]_' "$tmp/check.txt" 2>/dev/null
        echo "sanitize: $(grep -c 'rc 0;' "$tmp/sanitize.txt" 2>/dev/null) clean of $(grep -c '^step ' "$tmp/sanitize.txt" 2>/dev/null) runs"
        grep '^step ' "$tmp/sanitize.txt" 2>/dev/null | grep -v 'rc 0;'
        if [ -s "$out/variants.csv" ]; then
            echo
            echo "variants: median over rounds of GB/s, per shape"
            awk -F, 'NR > 1 { k = $1 " " $3; s[k] += $9; n[k]++ } END { for (k in s) printf "  %-60s %8.0f\n", k, s[k] / n[k] }' \
                "$out/variants.csv" | sort
        fi
    } >"$out/summary.txt" 2>&1
    cat "$out/summary.txt" >&2
    cp build/v15/ptxas.txt "$tmp/" 2>/dev/null
    tar -czf "$out/logs.tar.gz" -C "$tmp" . && rm -rf "$tmp"
    ;;
*)
    sed -n '2,40p' "$0"
    exit 2
    ;;
esac
