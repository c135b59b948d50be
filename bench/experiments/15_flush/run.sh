#!/usr/bin/env bash
# Not yet run. The decode bars in lockstep with L2 flushed by zeroing a buffer twice its size
# (the committed method) and by reading it (peer_sdpa.py --flush read), alternated twice: the
# flush's zeroing leaves L2 full of dirty lines, which the timed kernel writes back to memory
# while it reads K and V (README.md). Step 15 beside SDPA cuDNN and flash and, where installed,
# FlashAttention-4; 3 rounds a run; interleaved.txt: tools/interleaved.py on each CSV.
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, after tar xJf .carry/b.txz;
# FlashAttention-4 installed or not; ~5 min): run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
for i in 1 2; do
    for f in write read; do
        timeout -k 5 110 python3 bench/peer_sdpa.py --sweep decode --quick --steps 15 \
            --backends flash,cudnn,fa4 --lockstep --rounds 3 --flush $f --out "$o/${f}_$i.csv" \
            2>&1 | grep -v -e UserWarning -e exe_args >>"$o/progress.log"
        { echo "== $f $i"; python3 bench/experiments/tools/interleaved.py "$o/${f}_$i.csv"; } \
            >>"$o/interleaved.txt" 2>&1
    done
done
grep -E '^==|^fwd' "$o/interleaved.txt"
