#!/usr/bin/env bash
# Step 12 with the descriptors and the pin folded in (steps 13 and 14 carry its forward), on the
# H200, one call, FlashAttention-4 installed first (../../../../shared/tools/fa4-install.sh):
#   gpu_tests.txt     build/tests/gpu: every GPU test, the check grid's four input kinds for every
#                     step among them (steps 12-14 forward and backward)
#   sanitize.txt      bench/sanitize.sh 12 (memcheck, racecheck, synccheck), beside the tests
#   bars.csv          attn bench --sweep bars --steps 12 (the eight bar shapes, forward)
#   peers_bars.csv    bench/peer_sdpa.py --sweep bars --backends cudnn,fa4, right after
# usage (from the repository root, carrying build/steps, build/attn, build/tests, .device-libs):
#   bash bench/experiments/12_descriptors/final.sh OUT
set -u
o=${1:?usage: final.sh OUT}; mkdir -p "$o"
sha=$(cat .git-sha 2>/dev/null)
{ echo "commit $sha"; timeout -k 5 280 build/tests/gpu --verbose; echo "[exit status $?]"; } >"$o/gpu_tests.txt" 2>&1 &
{ echo "commit $sha"; timeout -k 5 250 bench/sanitize.sh 12; echo "[exit status $?]"; } >"$o/sanitize.txt" 2>&1 &
wait
grep -E "Synthesis|FAIL" "$o/gpu_tests.txt" | head -5
echo "sanitize: $(grep -c 'rc 0;' "$o/sanitize.txt") clean of $(grep -c '^step' "$o/sanitize.txt")"
ATTN_GIT_SHA=$sha timeout -k 5 100 build/attn bench --sweep bars --steps 12 --out "$o/bars.csv" 2>"$o/bars.log"
echo "bench rc $?"
timeout -k 5 170 python3 bench/peer_sdpa.py --sweep bars --backends cudnn,fa4 --out "$o/peers_bars.csv" 2>"$o/peers.log"
echo "peers rc $?"
