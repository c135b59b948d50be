#!/usr/bin/env bash
# Run 2026-12-02 (README.md). The bars measured as the issues ask, steps and peers interleaved: bench/peer_sdpa.py
# times step 12's forward and step 13's backward through the Python door (--steps) beside SDPA
# cuDNN and FlashAttention-4, three rounds, each shape's calls back to back, the order rotated
# each round (--rounds); the ratios per round from ../tools/interleaved.py. The bars sweep as
# it ran so far (attn bench's eight shapes, then the peers' eight) rides along in call 3 for
# comparison. Three calls back to back (FlashAttention-4's wheels travel in two carries:
# ../tools/candidates.sh's unpack_carry; .carry/b.txz as that file's packing says, with
# build/v15/fa4-install.sh in it):
#   call 1, carry .carry build/fa4s1:  run.sh 1
#   call 2, carry .carry build/fa4s2:  run.sh 2 OUT   (install, the forward: ~5 min)
#   call 3, carry .carry:              run.sh 3 OUT   (the backward, then the old sweep: ~6 min)
# With ATTN_STEPS_DIR set (e.g. to ../tools/candidates.sh's steps_with of a build waiting to land,
# such as ../13_mask_late's ml13.so), the steps are timed from there, in both methods.
set -u
cd "$(dirname "$0")/../../.." || exit 2
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
case ${1:-} in
1) unpack_carry; ls /tmp/fa4 ;;
2)
    o=${2:?usage: run.sh 2 OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
    unpack_carry
    fa4_install "$o"
    tail -n 1 "$o/fa4_install.txt"
    bars_interleaved "$o" 3 cudnn,fa4 fwd
    cat "$o/interleaved.txt"
    ;;
3)
    o=${2:?usage: run.sh 3 OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
    tar xJf .carry/b.txz
    bars_interleaved "$o" 3 cudnn,fa4 bwd
    cat "$o/interleaved.txt"
    mkdir -p "$o/sweep" && bars_run "$o/sweep" "${ATTN_STEPS_DIR:-build/steps}" "the bars sweep as before, for comparison"
    tail -n 3 "$o/sweep/bars.log"
    ;;
*) sed -n 2,12p "$0"; exit 2 ;;
esac
