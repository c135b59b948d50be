#!/usr/bin/env bash
# The dQ writer warp in steps 13 and 14 (the default backward's dQ adds issued by warp 1 of the
# producer, as the deterministic one's were), against the steps as committed, then their checks.
# Before the call, here: make (build/steps holds the steps with the writer); build/var13/base.so
# and base14.so are steps 13 and 14 as committed, n13.so and n14.so copies of the new ones, w2r.so
# the new step 13 with dQ by rows at every N (BwdTiles<64>::KEYS_FROM = INT_MAX); build_ab.
#   land.sh OUT   (on the H200, LD_LIBRARY_PATH=$PWD/.device-libs; ~8 min)
#     1. build/v15/ab --backward: base, n13, w2r at the eight bar shapes and D = 64 from N = 8192
#        (where dQ goes by keys); base14 against n14 with and without groups; the deterministic
#        backward before and after (base.so:det, n13.so:det)
#     2. side by side: the GPU suite; attn check --steps 13 and --steps 14 (backward grids, each
#        cut at 300 s); bench/sanitize.sh 13 14, memcheck + synccheck, and racecheck
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: land.sh OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
# shellcheck disable=SC2086
timeout -k 5 170 build/v15/ab --backward --rounds 4 --reps 8 $BAR_SHAPES --shape 4,8,8192,8192,64 \
    --shape 4,8,12288,12288,64 --shape 2,8,32768,32768,64 --shape 4,8,2048,2048,128 \
    build/var13/base.so build/var13/n13.so build/var13/w2r.so >"$o/ab13.csv" 2>"$o/ab13.log"
mkdir -p /tmp/g14 /tmp/det && cp build/var13/base14.so /tmp/g14/base.so
timeout -k 5 80 build/v15/ab --backward --rounds 4 --reps 8 --shape 4,32,4096,4096,128,8 \
    --shape 4,32,4096,4096,64,8 --shape 4,32,4096,4096,128,8,c --shape 4,8,4096,4096,64 \
    --shape 4,8,4096,4096,128 --shape 4,32,16384,16384,64,8 /tmp/g14/base.so build/var13/n14.so \
    >"$o/ab14.csv" 2>"$o/ab14.log"
cp build/var13/base.so /tmp/det/base.so && cp build/var13/n13.so /tmp/det/n13.so
timeout -k 5 60 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
    --shape 4,8,4096,4096,128 --shape 4,8,4096,4096,64,c /tmp/det/base.so:det /tmp/det/n13.so:det \
    >"$o/ab_det.csv" 2>"$o/ab_det.log"
{ echo "step 13:"; ab_ratios "$o/ab13.csv"; echo "step 14:"; ab_ratios "$o/ab14.csv"
  echo "deterministic:"; ab_ratios "$o/ab_det.csv"; } | tee "$o/ab_ratios.txt"
for s in 13 14; do
    { timeout -k 5 300 build/attn check --steps "$s"; echo "[exit status $?]"; } >"$o/check_$s.txt" 2>&1 &
done
suite build/steps "$o" 13 14
wait
{
    suite_summary "$o"
    for s in 13 14; do echo "check $s: $(grep -cE " PASS" "$o/check_$s.txt") PASS lines, $(grep -cE " FAIL" "$o/check_$s.txt") FAIL lines; $(tail -n 1 "$o/check_$s.txt")"; done
} | tee "$o/summary.txt"
