#!/usr/bin/env bash
# The bars again with PIN_COLS 4 landed (steps 12 and 13 from .carry/b.txz), by the methods
# 12_door_gap compared: FlashAttention-4 installed (land.sh's call carried build/fa4s1, this one
# build/fa4s2), then bench/peer_sdpa.py --sweep bars, cuDNN and FA4 beside step 12 (forward) and
# step 13 (backward), 5 rounds, graph replays and eager calls (--eager: a ~1 ms spin ahead of
# each); the forward once in lockstep, 2 rounds (the fix that keeps a graph's inputs alive); the
# six decode bars, 5 rounds. interleaved.txt: tools/interleaved.py on each CSV (~6 min).
# With `lockstep`, the three sweeps (forward, backward, decode) in lockstep only, 5 rounds each:
# a fresh machine's first call runs `bars.sh OUT unpack` with build/fa4s1 (~2 min with the start).
# PASSES="fwd bwd" (any of fwd, bwd, decode) runs only those sweeps.
#   usage: bars.sh OUT [unpack|lockstep]
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: bars.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
unpack_carry
[ "${2:-}" = unpack ] && exit 0
fa4_install "$o"
tail -n 1 "$o/fa4_install.txt"
door() {   # door NAME PASS STEP ROUNDS SWEEP [FLAGS]
    local n=$1 pass=$2 step=$3 r=$4 sw=$5
    shift 5
    sed "s/fwd,bwd/$pass/" bench/sweeps.txt >/tmp/sweeps_$pass
    ATTN_SWEEPS_FILE=/tmp/sweeps_$pass timeout -k 5 200 python3 bench/peer_sdpa.py --sweep "$sw" \
        --steps "$step" --rounds "$r" --out "$o/$n.csv" "$@" 2>>"$o/interleaved.log"
    echo "$n rc $?" | tee -a "$o/interleaved.log"
    { echo "== $n"; python3 bench/experiments/tools/interleaved.py "$o/$n.csv"; } >>"$o/interleaved.txt" 2>&1
}
if [ "${2:-}" = lockstep ]; then
    case " ${PASSES:-fwd bwd decode} " in *" fwd "*) door lockstep_fwd fwd 12 5 bars --backends cudnn,fa4 --lockstep ;; esac
    case " ${PASSES:-fwd bwd decode} " in *" bwd "*) door lockstep_bwd bwd 13 5 bars --backends cudnn,fa4 --lockstep ;; esac
    case " ${PASSES:-fwd bwd decode} " in *" decode "*)
        door lockstep_decode fwd 15 5 decode --quick --backends flash,cudnn,fa4 --lockstep ;; esac
    exit 0
fi
door interleaved_fwd fwd 12 5 bars --backends cudnn,fa4
door interleaved_bwd bwd 13 5 bars --backends cudnn,fa4
door interleaved_fwd_eager fwd 12 5 bars --backends cudnn,fa4 --eager
door interleaved_bwd_eager bwd 13 5 bars --backends cudnn,fa4 --eager
door lockstep_fwd fwd 12 2 bars --backends cudnn,fa4 --lockstep
door interleaved_decode fwd 15 5 decode --quick --backends flash,cudnn,fa4
grep -v UserWarning "$o/interleaved.log" | grep -ciE 'error' | sed 's/^/error lines: /'
