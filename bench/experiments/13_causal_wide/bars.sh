#!/usr/bin/env bash
# Not yet run. The bars after the 80-row causal tiles, in the second call of a lease (carry .carry
# and build/fa4s2; the first ran ../12_pin_partial/bars.sh OUT unpack with build/fa4s1):
# FlashAttention-4 installed, then the forward and backward bars in lockstep on the steps as
# committed (step 12's forward, step 13's backward beside cuDNN and FlashAttention-4, 5 rounds, as
# ../12_pin_partial/bars.sh lockstep; decode left out: step 15 has not changed since its bars).
#   usage: bars.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: bars.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
unpack_carry
fa4_install "$o"
tail -n 1 "$o/fa4_install.txt"
door() {   # door NAME PASS STEP ROUNDS SWEEP [FLAGS], as ../12_pin_partial/bars.sh
    local n=$1 pass=$2 step=$3 r=$4 sw=$5
    shift 5
    sed "s/fwd,bwd/$pass/" bench/sweeps.txt >/tmp/sweeps_$pass
    ATTN_SWEEPS_FILE=/tmp/sweeps_$pass timeout -k 5 200 python3 bench/peer_sdpa.py --sweep "$sw" \
        --steps "$step" --rounds "$r" --out "$o/$n.csv" "$@" 2>>"$o/interleaved.log"
    echo "$n rc $?" | tee -a "$o/interleaved.log"
    { echo "== $n"; python3 bench/experiments/tools/interleaved.py "$o/$n.csv"; } >>"$o/interleaved.txt" 2>&1
}
door lockstep_fwd fwd 12 5 bars --backends cudnn,fa4 --lockstep
door lockstep_bwd bwd 13 5 bars --backends cudnn,fa4 --lockstep
grep -A3 -E "^(== |fwd|bwd)" "$o/interleaved.txt" | grep -E "^(==|fwd|bwd)|/ fa4" | head -60
