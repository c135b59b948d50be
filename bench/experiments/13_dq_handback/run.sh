#!/usr/bin/env bash
# When the dQ writer hands its stagings back (README.md says why). early (early13.patch) and then
# order (order13.patch) and both (both13.patch) have run (run_h100/, order_h100/); order landed in
# steps 13 and 14. This is the landing's run: the deterministic writer as committed (det, det14)
# against the writer before it (a487da9: prev_13, prev_14), each over the default kernel as
# committed, then the GPU suite and sanitizers on the committed steps.
# Builds (tools/pack.sh): build/var_dqh/{base,det}.so (step 13 as committed), {base14,det14}.so
# (step 14), prev_13.so and prev_14.so (a487da9's).
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, tar xJf .carry/b.txz first):
#   run.sh OUT        ~8 min: launch by launch, 3 rounds, each build's time over the default's at
#                     D = 128 and 64, N = 4096 and 16384, causal at 16384, and step 14 grouped;
#                     then the whole GPU suite and bench/sanitize.sh 13 14 (380 s limit)
#   run.sh OUT price  ~1 min: step 13's A/B alone (on the H200, where the suite runs in verify.sh)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [price]}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var_dqh
timeout -k 5 100 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64 --shape 4,8,16384,16384,64,c \
    --shape 4,8,4096,4096,128 --shape 4,8,4096,4096,64 \
    $v/base.so $v/prev_13.so:det $v/det.so:det >"$o/ab.csv" 2>"$o/ab.log"
if [ "${2:-}" = price ]; then
    ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
    exit 0
fi
timeout -k 5 60 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
    --shape 4,32,4096,4096,128,8 --shape 4,32,4096,4096,64,8,c \
    $v/base14.so $v/prev_14.so:det $v/det14.so:det >"$o/ab14.csv" 2>>"$o/ab.log"
sed 's/base14/base/' "$o/ab14.csv" >/tmp/ab14.csv
{ echo "step 13"; ab_ratios "$o/ab.csv"; echo "step 14"; ab_ratios /tmp/ab14.csv; } | tee "$o/ab_ratios.txt"
d=$(steps_with)
SUITE_S=380 suite "$d" "$o" 13 14
suite_summary "$o"
