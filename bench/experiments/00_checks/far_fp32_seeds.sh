#!/usr/bin/env bash
# Step 00's fp32 backward on far inputs over many seeds: its dQ, dK, dV error against the fp64
# reference next to the bound attn run states (the floor: twice the error of the fp32 model, or
# dP - D's spread), to see how far under the bound a correct fp32 backward stays and how often a
# fresh seed crosses it (gpu::grid_far_from_zero failed once, on 1,1,7,13,8 causal, at fc321c3).
# usage (on the GPU machine): bench/experiments/00_checks/far_fp32_seeds.sh OUT.csv [SEEDS]
set -u
out=$1; n=${2:-150}
one() {   # SHAPE FLAG(--causal or -) SEED -> a CSV row
    local f=$2; [ "$f" = - ] && f=
    build/attn run --step 00 --shape $1 --dtype fp32 $f --inputs far --seed $3 --backward --reps 1 2>&1 |
        awk -v s="$1" -v c="$2" -v seed="$3" '/^check/ {
            for (i = 1; i <= NF; i++) {
                if ($i == "dQ" || $i == "dK" || $i == "dV") { t = $i; v[t] = $(i + 2) }
                if ($i == "(bound" && t != "") { b[t] = $(i + 1); sub(/,$/, "", b[t]); t = "" }
            }
            printf "\"%s\",%s,%s,%s,%s,%s,%s,%s,%s\n", s, c, seed, v["dQ"], b["dQ"], v["dK"], b["dK"], v["dV"], b["dV"] }'
}
export -f one
echo "shape,flags,seed,dq,dq_bound,dk,dk_bound,dv,dv_bound" > "$out"
for sh in "1,1,7,13,8 --causal" "1,1,7,13,8 -" "1,2,33,65,16 --causal" "1,1,64,64,64 --causal"; do
    for seed in $(seq 1 "$n"); do echo "$sh $seed"; done
done | xargs -P 12 -L 1 bash -c 'one "$@"' _ >> "$out"
