#!/usr/bin/env bash
# 13_split_mask: the kernel with the mask runs only the walk's tiles that can mask with it, the
# rest by a copy of the loop compiled without it (README). Builds (build/var13m, made by
# ../tools/pack.sh): m13 (split13.patch: two loops), m13b (split13b.patch: one loop, a branch
# a tile between the two copies), fm (the step with the masked kernel forced where nothing is
# masked: what the mask costs there), fmb (m13b, forced the same way: what the split leaves of it);
# m14b (split14b.patch: the same in step 14, timed against it).
# First the A/B, launch by launch, then checks: attn run against the CPU on causal and ragged
# shapes, far inputs included, with m13b in step 13's place, and its outputs' check lines
# against the step's digit for digit (the same arithmetic on every tile), memcheck on two shapes.
# Builds, here (after make): run.sh build
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs): run.sh OUT (~3 min)
set -u
cd "$(dirname "$0")/../../.." || exit 2
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
d=build/var13m E=bench/experiments/13_split_mask f=steps/13_backward_wgmma/attention.cu
if [ "${1:-}" = build ]; then
    mkdir -p $d
    force() { sed -i 's/    const bool unmasked = !p->causal/    const bool unmasked = false \&\& !p->causal/' $f; }
    for v in m13:split13 m13b:split13b fm: fmb:split13b; do
        [ -n "${v#*:}" ] && { git apply $E/${v#*:}.patch || exit 1; }
        case $v in fm*) force ;; esac
        # shellcheck disable=SC2086
        $NV $f -o $d/${v%%:*}.so || { git checkout $f; exit 1; }
        git checkout $f
    done
    git apply $E/split14b.patch || exit 1   # the same in step 14 (its walk: per query head)
    $NV steps/14_gqa/attention.cu -o $d/m14b.so || { git checkout steps/14_gqa; exit 1; }
    git checkout steps/14_gqa
    exit 0
fi
o=${1:?usage: run.sh OUT | run.sh build}; mkdir -p "$o" && o=$(cd "$o" && pwd)
mkdir -p /tmp/spl && cp build/steps/13_backward_wgmma.so /tmp/spl/base.so && cp $d/*.so /tmp/spl/
timeout -k 5 200 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64,c --shape 4,8,8192,8192,128,c \
    --shape 4,8,4096,4096,128,c --shape 4,8,4096,4096,64,c --shape 4,8,4000,4000,128 \
    --shape 4,8,4000,4000,64 \
    /tmp/spl/base.so /tmp/spl/m13.so /tmp/spl/m13b.so >"$o/ab_split.csv" 2>>"$o/ab.log"
echo "split rc $?" >>"$o/ab.log"
timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,8,16384,16384,128 --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64 \
    /tmp/spl/base.so /tmp/spl/fm.so /tmp/spl/fmb.so >"$o/ab_forced.csv" 2>>"$o/ab.log"
echo "forced rc $?" >>"$o/ab.log"
cp build/steps/14_gqa.so /tmp/spl/base14.so
timeout -k 5 100 build/v15/ab --backward --rounds 5 --reps 6 \
    --shape 4,8,16384,16384,128,c --shape 4,8,16384,16384,64,c --shape 4,32,4096,4096,128,8,c \
    /tmp/spl/base14.so /tmp/spl/m14b.so >"$o/ab_14.csv" 2>>"$o/ab.log"
echo "14 rc $?" >>"$o/ab.log"
sed -i 's#/base14.so#/base.so#' "$o/ab_14.csv"
{ echo "causal and ragged: the split over the step (time, lowest-highest over rounds)"
  ab_ratios "$o/ab_split.csv"
  echo "nothing masked: the masked kernel forced (fm), and with the split (fmb), over the step"
  ab_ratios "$o/ab_forced.csv"
  echo "step 14: the split over the step"
  ab_ratios "$o/ab_14.csv"; } | tee "$o/ab_ratios.txt"
sd=$(steps_with 13_backward_wgmma=$d/m13b.so)
{
    quick_runs "$sd" 13 "--backward" "1,2,1000,1000,128 --causal" "1,2,777,1000,64 --causal" \
        "2,3,1000,777,128 --causal" "1,2,333,1000,128" "1,1,4096,4096,64 --causal" \
        "1,1,8192,8192,128 --causal"
    quick_runs "$sd" 13 "--backward --inputs far" "1,2,1000,1000,128 --causal" "1,2,1000,777,64" \
        "1,2,777,777,64 --causal"
    for sh in "1,2,777,1000,128 --causal" "1,2,1000,777,64 --causal"; do
        # shellcheck disable=SC2086
        ATTN_STEPS_DIR=$sd timeout -k 5 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
            build/attn run --step 13 --backward --shape $sh --reps 1 2>&1 | grep -E "ERROR SUMMARY|^check"
        echo "memcheck $sh rc ${PIPESTATUS[0]}"
    done
} >"$o/checks.txt" 2>&1
echo "checks: $(grep -c -- '-> PASS' "$o/checks.txt") PASS, $(grep -E 'FAIL|rror' "$o/checks.txt" | grep -vc 'ERROR SUMMARY: 0 errors') FAIL or error"
same_lines "$sd" 13 "--backward" "$o/same_bits.txt" "1,2,1000,1000,128 --causal" "2,3,1000,777,64 --causal" "1,2,8192,8192,128 --causal" \
    "1,2,333,1000,128"
