#!/usr/bin/env bash
# Step 12's forward with O's rescale skipped while no row max of the warp has grown by more than
# 2^8 (lazy.patch, FlashAttention-4's threshold on Blackwell): the warp votes once a key tile;
# when no row grew that much it keeps its old maxima (p up to 2^8, fine in fp32 and bf16), alpha is
# 1 and the 32 (D = 64) or 64 (D = 128) FMULs of O and alpha's two MUFU are skipped by a branch.
# With random inputs the maxima settle within the first key tiles, so nearly every trip skips.
# SASS (nvcc 13.0, ../tools/sass_loop.py --waits), not causal: the unmasked loop 436 -> 442
# instructions with every path at D = 64 (410 when the rescale is skipped), 562 -> 575 at D = 128
# (511 skipped); the same registers, no spill.
# Prediction: 0-2 % less time at D = 64 (MUFU time near the tensor pipe's; the FMULs cost issue
# slots and energy, not MUFU time), 0-1.5 % at D = 128 (power-bound: 12_power).
# Builds, here (make first; ../tools/candidates.sh's NV):
#   git apply bench/experiments/12_lazy_rescale/lazy_b.patch
#   $NV steps/12_three_warpgroups/attention.cu -o build/var_lazy/lazyb.so
#   git checkout steps/12_three_warpgroups/attention.cu
#   cp build/steps/12_three_warpgroups.so build/var_lazy/base.so
# (lazy8.so from lazy.patch was the first run's, run_h100/: P's packing behind the branch; lazy_b
# packs P before it) and lazy13.so, lazy14.so from lazy13.patch, lazy14.patch (lazy_b's lines in
# steps 13 and 14, which carry the forward). tools/pack.sh builds them all.
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, .carry unpacked; ~6 min): run.sh OUT
#   run.sh OUT lockstep (lease call 5, after call 2 on its machine, FlashAttention-4 installed, or
#   after call 1 carrying build/fa4s2, which it installs; ~3 min, ~4 with the install): lazy128's
#   forward in lockstep beside step 12 as committed, cuDNN and FA4, 5 rounds
#   run.sh OUT suite: to land it, the whole GPU suite beside bench/sanitize.sh 12 13 14 with the
#   three builds in the steps' place (candidates.sh's suite; ~6 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [suite]}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var_lazy
if [ "${2:-}" = lockstep ]; then   # after lease call 2 on its machine, or after call 1 carrying build/fa4s2
    python3 -c 'import flash_attn.cute' 2>/dev/null ||
        { unpack_carry; fa4_install "$o"; tail -n 1 "$o/fa4_install.txt"; }
    # the bar's own method: step 12 as committed and lazy128's forward as step 13 (whose forward
    # is step 12's; make diff A=12 B=13 shows the backward alone) beside cuDNN and FA4, in turn
    d=$(steps_with 13_backward_wgmma=$v/lazy128_13.so)
    sed "s/fwd,bwd/fwd/" bench/sweeps.txt >/tmp/sweeps_fwd
    ATTN_STEPS_DIR=$d ATTN_SWEEPS_FILE=/tmp/sweeps_fwd timeout -k 5 300 python3 bench/peer_sdpa.py \
        --sweep bars --steps 12,13 --backends cudnn,fa4 --lockstep --rounds 5 --out "$o/lockstep_fwd.csv" \
        2>"$o/lockstep.log"
    echo "lockstep rc $?"
    python3 bench/experiments/tools/interleaved.py "$o/lockstep_fwd.csv" | tee "$o/lockstep.txt"
    exit 0
fi
if [ "${2:-}" = suite ]; then
    d=$(steps_with 12_three_warpgroups=$v/lazy128.so 13_backward_wgmma=$v/lazy128_13.so 14_gqa=$v/lazy128_14.so)
    suite "$d" "$o" 12 13 14
    suite_summary "$o"
    exit 0
fi
# first run (run_h100/): lazy8.so; then lazy_b.patch, P packed before the branch (lazyb.so); since
# the third, lazy128.so too (the skip at D = 128 only; its D = 64 kernels are the step's SASS, so
# its D = 64 rows say how far two identical builds read apart)
d=$(steps_with 12_three_warpgroups=$v/lazy128.so)
# shellcheck disable=SC2086
timeout -k 5 260 build/v15/ab --rounds 3 --reps 6 $BAR_SHAPES $v/base.so $v/lazyb.so $v/lazy128.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
ATTN_STEPS_DIR=$d timeout -k 5 240 build/attn check --step 12 --forward >"$o/check.txt" 2>&1
echo "check rc $?: $(tail -n 1 "$o/check.txt")"
for inp in late far; do
    quick_runs "$d" 12 "--inputs $inp" "1,2,1000,777,64 --causal" "2,3,4000,4001,64" "1,2,777,1000,128 --causal" \
        "2,4,1000,1000,128" "1,4,16384,4097,64"
done >"$o/checks.txt" 2>&1
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS, $(grep -cE 'FAIL|rror' "$o/checks.txt") FAIL or error"
