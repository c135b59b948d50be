#!/usr/bin/env bash
# Not yet run. Is step 12's lockstep ratio to FlashAttention-4 set by the card's power limit?
# (README.md says why it may be.) power.py: each forward alone and sustained for 3 s, step 12 as
# committed, step 12 before 12_pin_alpha (build/var_power/before, built by tools/pack.sh from
# d0c043f), FlashAttention-4 and SDPA cuDNN at D = 64, N = 16384 (causal and not), D = 128,
# N = 16384 and 4096, two rounds, with nvidia-smi sampling the SM clock and the board's power
# every 20 ms; then the power limits and clocks as nvidia-smi -q gives them. First, the two step-12
# builds launch by launch (tools/ab) with uniform inputs and with Gaussian ones (ab_*.csv).
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, after the bars' first call
# unpacked .carry and FlashAttention-4's first half, in a call carrying build/fa4s2; ~5 min):
#   run.sh OUT
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
python3 -c 'import flash_attn.cute.interface' 2>/dev/null || { unpack_carry; fa4_install "$o"; }
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE >"$o/smi_q_before.txt" 2>&1
# the launch-by-launch A/B that saw 12_pin_alpha gain, with attn bench's uniform inputs and with
# Gaussian ones (--normal: what the lockstep's torch.randn gives), before the sustained runs
mkdir -p /tmp/p12   # ab names a build by its file name, and ab_ratios divides by base.so's time
cp build/var_power/before/12_three_warpgroups.so /tmp/p12/base.so
cp build/steps/12_three_warpgroups.so /tmp/p12/after.so
for inputs in uniform normal; do
    # shellcheck disable=SC2046
    timeout -k 5 100 build/v15/ab --rounds 3 --reps 6 $([ $inputs = normal ] && echo --normal) \
        --shape 4,8,16384,16384,64 --shape 4,8,16384,16384,64,c /tmp/p12/base.so /tmp/p12/after.so \
        >"$o/ab_$inputs.csv" 2>>"$o/ab.log"
    echo "launch by launch, $inputs inputs, the committed step over the one before:"
    ab_ratios "$o/ab_$inputs.csv"
done >"$o/ab_ratios.txt"
timeout -k 5 420 python3 bench/experiments/12_power/power.py "$o/power.csv" \
    --before build/var_power/before 2>&1 | grep -v -e UserWarning -e exe_args >"$o/power.log"
echo "power.py rc ${PIPESTATUS[0]}" >>"$o/power.log"
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE >"$o/smi_q_after.txt" 2>&1
cat "$o/ab_ratios.txt"; tail -40 "$o/power.log"
