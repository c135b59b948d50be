#!/usr/bin/env bash
# The lease of 2026-12-01 (run that day at ddf52c9; results: ../README.md, "The pending changes, measured"): two candidates built here,
# ../13_dq_split (the backward's dQ split at D = 64 chosen per problem: pern) and ../12_streamk64
# (the forward's stream-K at D = 64: sk), timed, then checked together, then the bars run with
# both beside SDPA cuDNN and FlashAttention-4. Three calls back to back, as lease_fin.sh's.
# Here, before the calls:
#   make && make tests; bench/experiments/15_decode/run.sh build (build/v15/ab);
#   bench/experiments/13_dq_split/run.sh build; PERN=1 bench/experiments/12_streamk64/run.sh build
#   (sk13, sk14 on top of pern); pack-libs; git rev-parse --short HEAD >.git-sha
#   bash bench/experiments/tools/lease_split.sh pack    (.carry/b.txz, build/fa4s1, build/fa4s2)
# On the H200, export LD_LIBRARY_PATH=$PWD/.device-libs first, then:
#   call 1, carry .carry build/fa4s1:  lease_split.sh 1 $OUT   both run.sh run: quick checks, then
#                                      each candidate timed against its step (~4 min)
#   call 2, carry .carry build/fa4s2:  lease_split.sh 2 $OUT   FlashAttention-4 installed; the GPU
#                                      suite and bench/sanitize.sh 12 14 with sk12, sk13 (pern +
#                                      sk), sk14 in place, and the sanitizers on the shapes that
#                                      reach the new paths (~6 min)
#   call 3, carry .carry:              lease_split.sh 3 $OUT   the bars sweep, step 12 as sk12 and
#                                      step 13 as sk13, and the peers (~4 min); canonical only for
#                                      what calls 1 and 2 say to land
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
L=bench/experiments/tools/lease.sh
K=build/v12k
case ${1:-} in
pack)
    LEASE_BUILDS="build/steps build/attn build/tests build/v15/ab build/v15/fa4-install.sh $(echo build/v13s/*.so $K/*.so)" bash $L pack
    ;;
1)
    o=${2:?usage: lease_split.sh 1 OUT}
    bash $L unpack
    bash bench/experiments/13_dq_split/run.sh run "$o/split"
    bash bench/experiments/12_streamk64/run.sh run "$o/sk"
    ;;
2)
    o=${2:?usage: lease_split.sh 2 OUT}
    bash $L unpack
    fa4_install "$o" &   # FlashAttention-4 for call 3, on the CPU, while the suite runs
    tmp=$(mktemp -d)
    sd=$(steps_with 12_three_warpgroups=$K/sk12.so 13_backward_wgmma=$K/sk13.so 14_gqa=$K/sk14.so)
    {   # the new paths, which bench/sanitize.sh's shapes do not reach: stream-K at D = 64 (forward),
        # dQ by keys (backward, Nq >= 8192), in 13 and 14
        cs=/usr/local/cuda/bin/compute-sanitizer
        for tool in memcheck racecheck synccheck; do
            for r in "12 1,300,1,2100,64" "12 1,265,1,2500,64" "13 1,1,8192,200,64 --backward" \
                     "13 1,2,8192,256,64 --backward" "13 1,1,8200,300,64 --causal --backward" \
                     "14 1,4,8192,200,64,2 --backward" "14 1,266,1,2100,64,7"; do
                out=$(ATTN_STEPS_DIR=$sd timeout -k 5 120 $cs --tool $tool --error-exitcode 99 build/attn run \
                      --step ${r%% *} --shape ${r#* } --reps 1 2>&1)
                echo "step ${r%% *} $tool ${r#* }: rc $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1);" \
                     "$(grep -E -- '-> (PASS|FAIL)' <<<"$out" | tail -1)"
            done
        done; } >"$tmp/sanitize_new.txt" 2>&1 &
    echo "commit $(cat .git-sha 2>/dev/null); steps 12, 13, 14 as sk12, sk13 (pern + sk), sk14" >"$tmp/gpu_tests.txt"
    suite "$sd" "$tmp" 12 14
    wait
    { suite_summary "$tmp"
      echo "sanitize_new.txt: $(grep -c 'rc 0;' "$tmp/sanitize_new.txt") clean of $(grep -c '^step ' "$tmp/sanitize_new.txt") runs"
      grep '^step ' "$tmp/sanitize_new.txt" | grep -v 'rc 0;'
      tail -n 1 "$o/fa4_install.txt"; } >"$o/summary.txt" 2>&1
    cat "$o/summary.txt"
    tar -czf "$o/logs.tar.gz" -C "$tmp" .
    ;;
3)
    o=${2:?usage: lease_split.sh 3 OUT}
    [ -d $K ] || bash $L unpack
    sd=$(steps_with 12_three_warpgroups=$K/sk12.so 13_backward_wgmma=$K/sk13.so 14_gqa=$K/sk14.so)
    bars_run "$o" "$sd" "step 12 as sk12 (12_streamk64), step 13 as sk13 (13_dq_split pern + sk)"
    ;;
*)
    sed -n '2,22p' "$0"
    exit 2
    ;;
esac
