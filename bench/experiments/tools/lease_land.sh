#!/usr/bin/env bash
# The lease after lease_split.sh (2026-12-01): its two candidates landed in steps 12-14 (stream-K
# at D = 64; dQ by keys from Nq = 16384 at D = 64), so the committed steps are checked and swept
# as committed. Two calls back to back, as lease_split.sh's.
# Here, before the calls: make && make tests; pack-libs; git rev-parse --short HEAD >.git-sha;
#   bash bench/experiments/tools/lease_land.sh pack      (.carry/b.txz, build/fa4s1, build/fa4s2)
# On the H200, export LD_LIBRARY_PATH=$PWD/.device-libs first, then:
#   call 1, carry .carry build/fa4s1:  lease_land.sh 1 $OUT   the GPU suite (its grids now reach
#                                      both new paths), and beside it the sanitizers on the two
#                                      shapes bench/sanitize.sh gained, steps 12-14 (~4 min)
#   call 2, carry .carry build/fa4s2:  lease_land.sh 2 $OUT   FlashAttention-4 installed on the CPU
#                                      while the standard sweep of steps 12 and 13 runs, then the
#                                      peers on it (12_descriptors/standard.sh) (~6 min)
set -u
cd "$(dirname "$0")/../../.."
. bench/experiments/tools/candidates.sh
L=bench/experiments/tools/lease.sh
case ${1:-} in
pack)
    LEASE_BUILDS="build/steps build/attn build/tests build/v15/fa4-install.sh" bash $L pack
    ;;
1)
    o=${2:?usage: lease_land.sh 1 OUT}
    bash $L unpack
    tmp=$(mktemp -d)
    echo "commit $(cat .git-sha 2>/dev/null); steps as committed" >"$tmp/gpu_tests.txt"
    sd=$(steps_with)
    cs=/usr/local/cuda/bin/compute-sanitizer
    for tool in memcheck racecheck synccheck; do   # bench/sanitize.sh's two new top shapes, where new
        for r in "12 1,300,1,2100,64" "13 1,300,1,2100,64" "13 1,1,16384,200,64 --backward" \
                 "14 1,300,1,2100,64" "14 1,1,16384,200,64 --causal --backward"; do
            {   out=$(timeout -k 5 300 $cs --tool $tool --error-exitcode 99 build/attn run \
                      --step ${r%% *} --shape ${r#* } --reps 1 2>&1)
                echo "step ${r%% *} $tool ${r#* }: rc $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1);" \
                     "$(grep -E -- '-> (PASS|FAIL)' <<<"$out" | tail -1)"; } >"$tmp/san_${tool}_${r// /_}.txt" 2>&1 &
        done
    done
    { ATTN_STEPS_DIR=$sd timeout -k 5 420 build/tests/gpu --verbose; echo "[exit status $?]"; } >>"$tmp/gpu_tests.txt" 2>&1
    wait
    cat "$tmp"/san_*.txt >"$tmp/sanitize_new.txt" && rm -f "$tmp"/san_*.txt
    { suite_summary "$tmp"; } >"$o/summary.txt" 2>&1
    cat "$o/summary.txt"
    tar -czf "$o/logs.tar.gz" -C "$tmp" .
    ;;
2)
    o=${2:?usage: lease_land.sh 2 OUT}
    bash $L unpack
    fa4_install "$o" &
    t0=$SECONDS log=$o/bench.log
    { echo "commit $(cat .git-sha 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$log
    ATTN_GIT_SHA=$(cat .git-sha 2>/dev/null) timeout 330 build/attn bench --sweep standard --steps 12,13 --out $o/standard.csv 2>>$log
    echo "== attn bench rc $? at $((SECONDS - t0)) s" >>$log
    wait
    tail -n 1 "$o/fa4_install.txt"
    timeout 200 python3 bench/peer_sdpa.py --sweep standard --backends flash,cudnn,fa4 --out $o/peers_standard.csv \
        2>>$log
    echo "== peers rc $? at $((SECONDS - t0)) s" >>$log
    grep '^==\|rows to' $log
    ;;
*)
    sed -n '2,14p' "$0"
    exit 2
    ;;
esac
