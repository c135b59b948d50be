#!/usr/bin/env bash
# The mask's cost, removed where it never runs: step 13 with bwd_main<D, MASKED>, the launch picking
# MASKED = false for a problem with no masked pair (not causal, Nk a multiple of 128), against the
# step without the padded-key mask (`before`, tests/mutant_far.sh's sed: the step before the fix)
# and with the mask always compiled in (`shifted`, the step at 019b847), launch by launch
# (../tools/ab.c, the eight bar shapes, 3 rounds of 15). Then the checks of step 13 as it is now.
# Beside them, on the idle GPU first: ../12_three_warpgroups/4_variants.sh run, and steps 11 and 12
# at D = 64, N <= 2048 (the three-warpgroup forward at small N).
# Build here (nvcc, no GPU):  bench/experiments/12_far_rows/7_masked_template.sh build
# Run on the H200 (one call): bench/experiments/12_far_rows/7_masked_template.sh run OUT
set -u
cd "$(dirname "$0")/../../.."
NV="${NVCC:-/usr/local/cuda/bin/nvcc} -O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC -cudart shared
    -Xlinker -rpath=/usr/local/cuda/lib64 -Icommon -gencode arch=compute_90a,code=sm_90a"
case ${1:-} in
build)
    set -e
    mkdir -p build/ab build/v13
    git show 019b847:steps/13_backward_wgmma/attention.cu > build/v13/shifted.cu
    sed -e 's/^\( *const int mask_below = \)kw0 + 64 > Nk ? INT_MAX : \(causal ? kw0 + 63 : INT_MIN;\)$/\1\2/' \
        -e 's/^\( *const int key\[2\] = {kw0 + 16 \* warp + g\) + (kw0 + 16 \* warp + g >= Nk ? PAST : 0),$/\1,/' \
        -e 's/^\( *kw0 + 16 \* warp + g + 8\) + (kw0 + 16 \* warp + g + 8 >= Nk ? PAST : 0)};$/\1};/' \
        build/v13/shifted.cu > build/v13/before.cu
    [ "$(diff build/v13/shifted.cu build/v13/before.cu | grep -c '^>')" = 3 ]
    $NV -o build/ab/v13_before.so build/v13/before.cu
    $NV -o build/ab/v13_shifted.so build/v13/shifted.cu
    $NV -o build/ab/v13_templated.so steps/13_backward_wgmma/attention.cu
    bench/experiments/12_three_warpgroups/4_variants.sh build
    ;;
run)
    o=$1; o=$2; t0=$SECONDS; w=$o/w; mkdir -p $w
    sha=$(cat .git-sha 2>/dev/null || echo unknown)
    sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
    echo "commit $sha" > $w/commit.txt
    timeout 200 build/ab/ab --backward --rounds 3 --reps 15 $sh8 build/ab/v13_before.so \
        build/ab/v13_shifted.so build/ab/v13_templated.so > $w/ab_bwd.csv 2> $w/ab_bwd.err
    echo "ab bwd at $((SECONDS-t0)) s"
    mkdir -p $w/variants
    timeout 240 bench/experiments/12_three_warpgroups/4_variants.sh run $w/variants
    echo "variants at $((SECONDS-t0)) s"
    shs=""; for n in 512 1024 2048; do shs="$shs --shape 4,8,$n,$n,64 --shape 4,8,$n,$n,64,c"; done
    timeout 60 build/ab/ab --rounds 3 --reps 15 $shs build/steps/11_persistent.so \
        build/steps/12_three_warpgroups.so > $w/ab_small_n.csv 2> $w/ab_small_n.err
    echo "small N at $((SECONDS-t0)) s"
    left=$((590 - (SECONDS - t0) - 20))
    { echo "commit $sha"; timeout $left build/tests/gpu --verbose; echo "[exit status $?]"; } > $w/gpu_tests.txt 2>&1 &
    { echo "commit $sha"; timeout $left build/attn check --steps 13 --csv $w/check.csv; echo "[exit status $?]"; } > $w/check.txt 2>&1 &
    { echo "commit $sha"; timeout $left build/attn check --steps 13 --inputs far --csv $w/check_far.csv; echo "[exit status $?]"; } > $w/check_far.txt 2>&1 &
    for t in memcheck racecheck synccheck; do
      ( TOOLS=$t timeout $left bench/sanitize.sh 13 > $w/s_$t.txt 2>&1; echo "[exit status $?]" >> $w/s_$t.txt ) &
    done
    { echo "# tests/mutant_far.sh"; echo "commit $sha"; timeout $left bash tests/mutant_far.sh; echo "[exit status $?]"; } > $w/mutants.txt 2>&1 &
    { echo "commit $sha"; bash bench/cli_examples.sh; } > $w/cli.txt 2>&1
    { echo "# pytest tests/test_torch.py: the PyTorch front door's tests"; echo "commit $sha"
      timeout $left python3 -m pytest -q tests/test_torch.py 2>&1 | tail -40; echo "[exit status ${PIPESTATUS[0]}]"
      echo; echo "# python3 python/train_demo.py: a one-layer model trained through the front door"; echo "commit $sha"
      timeout 200 python3 python/train_demo.py 2>&1 | tail -30; echo "[exit status ${PIPESTATUS[0]}]"; } > $w/python.txt 2>&1
    wait
    { echo "commit $sha"; cat $w/s_memcheck.txt $w/s_racecheck.txt $w/s_synccheck.txt; } > $w/sanitize.txt
    rm -f $w/s_*
    tar czf $o/logs.tgz -C $w .
    echo "done at $((SECONDS-t0)) s"
    grep -E "Synthesis" $w/gpu_tests.txt; grep -E "^13_.*PASS|^OK|FAIL [1-9]" $w/check.txt $w/check_far.txt | tail -4
    echo "sanitize: $(grep -c 'rc 0;' $w/sanitize.txt) clean of $(grep -c '^step' $w/sanitize.txt)"
    grep -E "OK|FAILED|exit status" $w/mutants.txt; grep -E "passed|failed|exit status" $w/python.txt
    ;;
*) echo "usage: $0 build | run OUT" >&2; exit 2 ;;
esac
