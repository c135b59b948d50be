#!/usr/bin/env bash
# The next GPU session's lease (written 2026-12-01, not yet run): step 13's dQ split against N
# (../13_dq_split/run.sh) and, if the per-problem split (pern) wins, its checks and the bars run
# with it beside SDPA cuDNN and FlashAttention-4. Three calls back to back, as lease_fin.sh's.
# Here, before the calls:
#   make && make tests; bench/experiments/15_decode/run.sh build (build/v15/ab);
#   bench/experiments/13_dq_split/run.sh build; pack-libs; git rev-parse --short HEAD >.git-sha
#   bash bench/experiments/tools/lease_split.sh pack    (.carry/b.txz, build/fa4s1, build/fa4s2)
# On the H200, export LD_LIBRARY_PATH=$PWD/.device-libs first, then:
#   call 1, carry .carry build/fa4s1:  lease_split.sh 1 $OUT   run.sh run: quick checks, then the
#                                      builds timed against step 13 at D = 64, N 2k-32k (~3 min)
#   call 2, carry .carry build/fa4s2:  lease_split.sh 2 $OUT   FlashAttention-4 installed beside
#                                      run.sh tests: the GPU suite and sanitizers with pern and
#                                      pern14 in place (~6 min)
#   call 3, carry .carry:              lease_split.sh 3 $OUT   the bars sweep, step 13 as pern, and
#                                      the peers (~4 min); canonical only if calls 1 and 2 say land
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
L=bench/experiments/tools/lease.sh
case ${1:-} in
pack)
    LEASE_BUILDS="build/steps build/attn build/tests build/v15/ab build/v15/fa4-install.sh build/v13s" bash $L pack
    ;;
1)
    o=${2:?usage: lease_split.sh 1 OUT}
    bash $L unpack
    bash bench/experiments/13_dq_split/run.sh run "$o/split"
    ;;
2)
    o=${2:?usage: lease_split.sh 2 OUT}
    bash $L unpack
    {   # FlashAttention-4 for call 3, on the CPU, while the suite runs
        mkdir -p /tmp/fa4a && cat /tmp/fa4/aa.aa /tmp/fa4/aa.ab >/tmp/fa4a/cu13.part.aa &&
            bash build/v15/fa4-install.sh /tmp/fa4/b /tmp/fa4a
    } >"$o/fa4_install.txt" 2>&1 &
    bash bench/experiments/13_dq_split/run.sh tests "$o/tests"
    wait
    tail -n 1 "$o/fa4_install.txt"
    ;;
3)
    o=${2:?usage: lease_split.sh 3 OUT}
    [ -d build/v13s ] || bash $L unpack
    sd=$(steps_with 13_backward_wgmma=build/v13s/pern.so 14_gqa=build/v13s/pern14.so)
    bars_run "$o" "$sd" "step 12 as committed, step 13 as pern (13_dq_split/pern.patch)"
    ;;
*)
    sed -n '2,17p' "$0"
    exit 2
    ;;
esac
