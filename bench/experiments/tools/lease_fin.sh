#!/usr/bin/env bash
# A GPU session's lease (run 2026-12-01 at cc275e4; results: ../13_bwd_descriptors/fin_lease/ and
# ../../results/h200/): the backward's candidate then
# (../13_bwd_descriptors/fin.sh: fin13, fin14) checked and timed, then the bars sweep with it in
# place beside SDPA cuDNN and FlashAttention-4. Two calls back to back, as lease.sh's.
# Here, before the calls:
#   make && make tests; bench/experiments/15_decode/run.sh build (build/v15/ab);
#   NVCC=nvcc bench/experiments/13_bwd_descriptors/fin.sh build; pack-libs; git rev-parse --short HEAD >.git-sha
#   bash bench/experiments/tools/lease_fin.sh pack    (.carry/b.txz, build/fa4s1, build/fa4s2)
# On the H200, export LD_LIBRARY_PATH=$PWD/.device-libs first, then:
#   call 1, carry .carry build/fa4s1:  lease_fin.sh 1 $OUT   fin.sh run: step 13 against fin13
#                                      launch by launch, the GPU suite and sanitizers with fin13 and
#                                      fin14 in place (~7 min)
#   call 2, carry .carry build/fa4s2:  lease_fin.sh 2 $OUT   FlashAttention-4 installed, then the
#                                      bars sweep (step 12 forward, fin13 as step 13 backward) and
#                                      the peers (~5 min); canonical only if call 1 says land
#   call 3, carry .carry:              lease_fin.sh 3 $OUT [fin]   the standard sweep of steps 12
#                                      and 13 beside SDPA and FA4 (../12_descriptors/standard.sh),
#                                      with fin13 as step 13 when asked (~9 min)
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
L=bench/experiments/tools/lease.sh
case ${1:-} in
pack)
    LEASE_BUILDS="build/steps build/attn build/tests build/v15/ab build/v15/fa4-install.sh build/v13f" bash $L pack
    ;;
1)
    o=${2:?usage: lease_fin.sh 1 OUT}
    bash $L unpack
    bash bench/experiments/13_bwd_descriptors/fin.sh run "$o/fin"
    ;;
2)
    o=${2:?usage: lease_fin.sh 2 OUT}
    bash $L unpack
    { mkdir -p /tmp/fa4a && cat /tmp/fa4/aa.aa /tmp/fa4/aa.ab >/tmp/fa4a/cu13.part.aa &&
          bash build/v15/fa4-install.sh /tmp/fa4/b /tmp/fa4a; } >"$o/fa4_install.txt" 2>&1
    tail -n 1 "$o/fa4_install.txt"
    sd=$(steps_with 13_backward_wgmma=build/v13f/fin13.so 14_gqa=build/v13f/fin14.so)
    bars_run "$o" "$sd" "step 12 as committed, step 13 as fin13 (13_bwd_descriptors/fin.sh)"
    ;;
3)
    o=${2:?usage: lease_fin.sh 3 OUT [fin]}
    [ -d build/v13f ] || bash $L unpack
    [ "${3:-}" = fin ] && export ATTN_STEPS_DIR=$(steps_with 13_backward_wgmma=build/v13f/fin13.so 14_gqa=build/v13f/fin14.so)
    bash bench/experiments/12_descriptors/standard.sh "$o"
    tail -n 3 "$o/bench.log"
    ;;
*)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
