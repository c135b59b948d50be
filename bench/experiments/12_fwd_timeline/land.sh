#!/usr/bin/env bash
# Steps 12-14 with the pin at D = 128 on the maxima (Tiles<128>::PIN_SUMS = false: variants.sh's
# pinmax, the same SASS), checked and measured as committed. Two calls back to back.
# Here, before the calls: make && make tests; pack-libs; bash land.sh pack
#                                 (.carry/b.txz with the step 12 before, build/v12r/base.so)
# On the H200, export LD_LIBRARY_PATH=$PWD/.device-libs first, then:
#   call 1, carry .carry build/fa4s1:  land.sh 1 OUT   the GPU suite and bench/sanitize.sh 12 14
#                                      (candidates.sh's suite), and attn run of step 12 before
#                                      and after on the same seeds (same_bits.txt: the check lines
#                                      must match digit for digit: only the schedule changed)
#   call 2, carry .carry build/fa4s2:  land.sh 2 OUT   FlashAttention-4 installed, then the bars
#                                      sweep (step 12's forward, step 13's backward, SDPA cuDNN
#                                      and FA4), and the standard sweep's forward rows of steps 12
#                                      and 13 with SDPA flash, cuDNN and FA4
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
case ${1:-} in
pack)
    set -e
    git rev-parse --short HEAD >.git-sha
    mkdir -p .carry
    tar cf - build/steps build/attn build/tests build/v12r/base.so build/v15/fa4-install.sh .device-libs .git-sha |
        xz -T8 -6 >.carry/b.txz
    du -sh .carry/b.txz
    ;;
1)
    o=${2:?usage: land.sh 1 OUT}
    unpack_carry
    tmp=$(mktemp -d)
    echo "commit $(cat .git-sha 2>/dev/null); steps as committed" >"$tmp/gpu_tests.txt"
    same_bits "$(steps_with 12_three_warpgroups=build/v12r/base.so)" "$tmp/same_bits.txt"
    suite "$(steps_with)" "$tmp" 12 14
    suite_summary "$tmp" >"$o/summary.txt" 2>&1
    cat "$o/summary.txt"
    tar -czf "$o/logs.tar.gz" -C "$tmp" .
    ;;
2)
    o=${2:?usage: land.sh 2 OUT}
    unpack_carry
    fa4_install "$o"
    tail -n 1 "$o/fa4_install.txt"
    sha=$(cat .git-sha 2>/dev/null)
    bars_run "$o" build/steps "steps 12 and 13 as committed"
    sed 's/fwd,bwd/fwd/' bench/sweeps.txt >/tmp/sweeps_fwd
    t0=$SECONDS log=$o/bench.log
    { echo "commit $sha"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$log
    ATTN_SWEEPS_FILE=/tmp/sweeps_fwd ATTN_GIT_SHA=$sha timeout 300 build/attn bench --sweep standard \
        --steps 12,13 --out $o/standard.csv 2>>$log
    echo "== attn bench rc $? at $((SECONDS - t0)) s" >>$log
    ATTN_SWEEPS_FILE=/tmp/sweeps_fwd timeout 200 python3 bench/peer_sdpa.py --sweep standard \
        --backends flash,cudnn,fa4 --out $o/peers_standard.csv 2>>$log
    echo "== peers rc $? at $((SECONDS - t0)) s" >>$log
    grep '^==\|rc ' $log $o/bars.log
    cd "$o" && tar -czf results.tar.gz ./*.csv ./*.log ./*.txt && ls -la
    ;;
*)
    sed -n '2,17p' "$0"
    exit 2
    ;;
esac
