#!/usr/bin/env bash
# The lease plan of ../README.md ("What waits for a GPU"), one call per number, so a lease that
# comes runs it without writing scripts: on the GPU machine, from the repository root,
#   bash bench/experiments/tools/lease.sh N $OUT
# with the carries the plan names for call N (here first: make, make tests, tools/pack.sh).
# Each part is tarred under OUT as it ends, so a call cut at its limit still returns what it
# finished (at most 8 files come back).
#   1  carry .carry, build/fa4s1: unpack; then the steps as committed (13_causal_wide/verify.sh:
#      the GPU suite, the Python door, memcheck) on any card (the contract's bounds, step 00's
#      handles, step 15's row count and its widened GPU test have run on none yet), and on an
#      H200 the deterministic price (13_dq_handback/run.sh price)                   (~8 min)
#   1s carry .carry alone, when the device time left is short: the same without
#      FlashAttention-4's first half
#   2  carry build/fa4s2 (after 1, same machine): the bars in lockstep, forward and
#      backward, with FlashAttention-4; then, on an H200, 12_power                 (~5-7 min)
#   3  (after 1 and 2) 13_mask_bias/rest.sh: the deterministic price with the
#      mask bias, Nsight Compute on the causal backward beside FlashAttention-4    (~4 min)
#   a  carry .carry alone: 1s on an H200; on another card nothing (what waits is for the H200:
#      call 4 ran on H100s twice, 12_lazy_rescale/run_h100*)
#   p  carry .carry alone, when under 5 minutes of device time are left: on an H200 the
#      deterministic price alone (13_dq_handback/run.sh price, ~1 min); elsewhere nothing
#   4  (after 1, on the H200) 12_lazy_rescale/run.sh: the forward with O's rescale
#      skipped while the row maxima hold (lazyb: both head dims; lazy128: D = 128 only),
#      launch by launch against the step, and lazy128's checks                     (~7 min)
#   5  (after 2 on its machine; or after 1 carrying build/fa4s2, installing FlashAttention-4)
#      12_lazy_rescale/run.sh lockstep: lazy128's forward in lockstep beside step 12, cuDNN
#      and FA4                                                                      (~3-4 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
n=${1:?usage: lease.sh 1|1s|2|3|4|5|a|p OUT}
o=${2:?usage: lease.sh 1|1s|2|3|4|5|a|p OUT}; mkdir -p "$o" && o=$(cd "$o" && pwd)
export LD_LIBRARY_PATH=$PWD/.device-libs
E=bench/experiments
part() {   # part NAME COMMAND...: run it, its output in OUT/NAME.log, then OUT/NAME tarred
    local name=$1 files
    shift
    "$@" >"$o/$name.log" 2>&1
    echo "== $name rc $?" | tee -a "$o/$name.log"
    tail -n 25 "$o/$name.log"
    files=("$name.log")
    [ -d "$o/$name" ] && files+=("$name")
    (cd "$o" && tar cf "$name.tar" "${files[@]}" && rm -rf "${files[@]}")
}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee -a "$o/gpu.txt"
if [ "$n" = a ]; then if grep -q H200 "$o/gpu.txt"; then n=1s; else echo "lease.sh a: not an H200; nothing run"; exit 0; fi; fi
case $n in
    1|1s) if [ "$n" = 1 ]; then bash $E/12_pin_partial/bars.sh /tmp/o unpack >"$o/unpack.txt" 2>&1
          else tar xJf .carry/b.txz; fi
          part verify bash $E/13_causal_wide/verify.sh "$o/verify"
          if grep -q H200 "$o/gpu.txt"; then
              part price bash $E/13_dq_handback/run.sh "$o/price" price
          else echo "lease.sh $n: not an H200; the deterministic price waits for one"; fi ;;
    2) part bars env PASSES="fwd bwd" bash $E/12_pin_partial/bars.sh "$o/bars" lockstep
       if grep -q H200 "$o/gpu.txt"; then part power bash $E/12_power/run.sh "$o/power"
       else echo "lease.sh 2: 12_power ran on H100s twice (run_h100/); it waits for an H200"; fi ;;
    3) part rest bash $E/13_mask_bias/rest.sh "$o/rest" ;;
    p) if grep -q H200 "$o/gpu.txt"; then tar xJf .carry/b.txz; part price bash $E/13_dq_handback/run.sh "$o/price" price
       else echo "lease.sh p: not an H200; nothing run"; fi ;;
    4) [ -f build/var_lazy/lazy8.so ] || tar xJf .carry/b.txz
       part lazy bash $E/12_lazy_rescale/run.sh "$o/lazy" ;;
    5) part lazy_lockstep bash $E/12_lazy_rescale/run.sh "$o/lazy_lockstep" lockstep ;;
    *) echo "usage: lease.sh 1|1s|2|3|4|5|a|p OUT"; exit 2 ;;
esac
ls "$o"
