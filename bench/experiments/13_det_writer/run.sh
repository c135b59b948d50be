#!/usr/bin/env bash
# Run (README.md's result); its builds as tools/pack.sh made them at 44989c7. The deterministic
# backward's dQ writer in steps 13 and 14 (writer13.patch,
# writer14.patch: one patch per step with four compile-time switches; README.md says why):
# both (DQW_BOTH: the two warpgroups' bulk adds issued before either read wait, in every
# kernel), late (DQW_LATE: the deterministic writer takes both stagings before its turn, then
# adds and passes at once), lp (late, and DQW_PREF: the next visit's counter read while this
# visit's adds complete), rev (DQW_REV: a group's blocks launched last key tile first), lpr (all
# three), against the step as committed, deterministic and not (bothd: both, the default kernel);
# land (land13.patch, land14.patch): lpr as it would land, without the switches.
# Builds (tools/pack.sh): build/var_dqw/{base,det,both,late,lp,rev,lpr,land,bothd}.so from step
# 13 (det.so and base.so the step as committed, bothd.so the same file as both.so, named apart for
# ab_ratios), and {both,late,lp,rev,lpr,land}14.so from step 14.
# usage (on the GPU machine, LD_LIBRARY_PATH=$PWD/.device-libs, tar xJf .carry/b.txz first):
#   run.sh OUT         ~4 min: launch by launch, each build's time over the default's, then the
#                      check lines of the deterministic builds on five shapes
#   run.sh OUT quick   ~3 min: the A/B at N = 16384 only (D = 128 and 64, not causal) with base,
#                      det, lp, rev, lpr, land; land's check lines and its repeatable test
#   run.sh OUT suite V ~6 min: to land variant V (land, if lpr gained), the whole GPU suite (its deterministic tests:
#                      bitwise repeatable over runs and two streams) beside bench/sanitize.sh
#                      13 14 with both steps so built
set -u
cd "$(dirname "$0")/../../.." || exit 2
o=${1:?usage: run.sh OUT [suite V]}; mkdir -p "$o"
# shellcheck source=../tools/candidates.sh
. bench/experiments/tools/candidates.sh
v=build/var_dqw
if [ "${2:-}" = suite ]; then
    b=${3:?usage: run.sh OUT suite both|late|lp|rev|lpr|land}
    d=$(steps_with 13_backward_wgmma=$v/$b.so 14_gqa=$v/${b}14.so)
    suite "$d" "$o" 13 14
    suite_summary "$o"
    exit 0
fi
checks() {   # checks BUILD...: each build's deterministic check lines, steps 13 and 14
    local b d sh st
    for b in "$@"; do
        d=$(steps_with 13_backward_wgmma=$v/$b.so 14_gqa=$v/${b}14.so)
        for sh in "2,4,1000,1000,128" "1,8,4096,4096,64" "1,4,3000,2900,128" "2,8,1000,1000,128,2" \
            "1,4,2000,1900,128 --causal"; do
            for st in 13 14; do
                case $sh in *,2) [ $st = 13 ] && continue;; esac
                echo "## $b step $st $sh"
                # shellcheck disable=SC2086  # the shape, and --causal after it
                ATTN_STEPS_DIR=$d timeout -k 5 60 build/attn run --step $st --backward \
                    --deterministic --shape $sh --reps 1 2>&1 | grep -E '^check|FAIL|rror'
            done
        done
    done >"$o/checks.txt" 2>&1
    grep -c PASS "$o/checks.txt"; grep -v -e PASS -e '^##' "$o/checks.txt"
}
if [ "${2:-}" = quick ]; then
    timeout -k 5 150 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
        --shape 4,8,16384,16384,64 $v/base.so $v/det.so:det $v/lp.so:det $v/rev.so:det \
        $v/lpr.so:det $v/land.so:det >"$o/ab.csv" 2>"$o/ab.log"
    ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
    checks land
    d=$(steps_with 13_backward_wgmma=$v/land.so 14_gqa=$v/land14.so)
    { ATTN_STEPS_DIR=$d timeout -k 5 100 build/tests/gpu --verbose \
          --filter 'gpu/deterministic_backward_is_repeatable' 2>&1; echo "[exit status $?]"; } >"$o/rep_land.txt"
    grep -h -E 'Synthesis|exit status' "$o/rep_land.txt"
    exit 0
fi
timeout -k 5 300 build/v15/ab --backward --rounds 3 --reps 6 --shape 4,8,16384,16384,128 \
    --shape 4,8,4096,4096,128 --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64 \
    --shape 4,8,16384,16384,128,c $v/base.so $v/det.so:det $v/both.so:det $v/late.so:det \
    $v/lp.so:det $v/rev.so:det $v/lpr.so:det $v/land.so:det $v/bothd.so >"$o/ab.csv" 2>"$o/ab.log"
ab_ratios "$o/ab.csv" | tee "$o/ab_ratios.txt"
checks both late lp rev lpr land
