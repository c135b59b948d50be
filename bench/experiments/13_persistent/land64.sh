#!/usr/bin/env bash
# The persistent backward where it paid (persist64_13.patch, persist64_14.patch: BwdTiles<64>::PERSIST,
# dQ by rows, not deterministic; every other kernel keeps one block per unit). Run 2026-12-02: land64_run/, not kept (README).
# Before the call, on the CPU machine (the builds travel in .carry, as ../tools/candidates.sh's
# unpack_carry expects):
#   mkdir -p build/var13 && make && cp build/steps/13_backward_wgmma.so build/var13/base13.so &&
#   cp build/steps/14_gqa.so build/var13/base14.so
#   patch -p1 < bench/experiments/13_persistent/persist64_13.patch
#   patch -p1 < bench/experiments/13_persistent/persist64_14.patch
#   make && cp build/steps/13_backward_wgmma.so build/var13/p13.so && cp build/steps/14_gqa.so build/var13/p14.so
#   (build/steps then holds the patched steps, for the checks)
# On the H200 (LD_LIBRARY_PATH=$PWD/.device-libs):
#   land64.sh OUT   (~9 min; 2 calls' worth if the sanitizers run whole: TOOLS splits them)
#     1. build/v15/ab --backward: base13 against p13 at D = 64, N = 1024 ... 8192, causal and not
#        (where PERSIST runs), and D = 128, N = 4096 (where it does not: the refactor alone);
#        base14 against p14 at 4,32,4096,4096,64 with 8 and 32 K/V heads
#     2. side by side: the GPU suite; attn check --steps 13 and --steps 14 (backward grids, each
#        cut at 320 s); bench/sanitize.sh 13 14, memcheck + synccheck, and racecheck
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: land64.sh OUT}
mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
s13=""
for n in 1024 2048 4096 8192; do s13="$s13 --shape 4,8,$n,$n,64 --shape 4,8,$n,$n,64,c"; done
s13="$s13 --shape 4,8,4096,4096,128 --shape 4,8,4096,4096,128,c"
# shellcheck disable=SC2086
timeout -k 5 150 build/v15/ab --backward --rounds 3 --reps 8 $s13 build/var13/base13.so \
    build/var13/p13.so >"$o/ab13.csv" 2>"$o/ab13.log"
mkdir -p /tmp/ab14 && cp build/var13/base14.so /tmp/ab14/base.so
timeout -k 5 100 build/v15/ab --backward --rounds 3 --reps 8 --shape 4,32,4096,4096,64,8 \
    --shape 4,32,4096,4096,64 /tmp/ab14/base.so build/var13/p14.so >"$o/ab14.csv" 2>"$o/ab14.log"
{ echo "step 13:"; sed 's/base13\.so/base.so/' "$o/ab13.csv" >/tmp/ab13.csv; ab_ratios /tmp/ab13.csv
  echo "step 14:"; ab_ratios "$o/ab14.csv"; } | tee "$o/ab_ratios.txt"
for s in 13 14; do
    { timeout -k 5 320 build/attn check --steps "$s"; echo "[exit status $?]"; } >"$o/check_$s.txt" 2>&1 &
done
suite build/steps "$o" 13 14
wait
{
    suite_summary "$o"
    for s in 13 14; do echo "check $s: $(grep -E "^1[34]_[a-z_]+ +PASS" "$o/check_$s.txt" | tail -1) $(tail -n 1 "$o/check_$s.txt")"; done
} | tee "$o/summary.txt"
