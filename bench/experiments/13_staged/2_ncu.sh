#!/usr/bin/env bash
# Prepared, not yet run: why is the staged form of step 13's backward 5.5-7.8 % slower at D = 128?
# Its SASS has the flat kernel's sequence (README), so this asks Nsight Compute where the warps of
# each one wait: the full profile of bwd_main<128> at 4,8,4096,4096,128, not causal, flat (step 13)
# and staged (../12_backward/variants/staged_branch_free.patch), and ../12_backward/stalls.py on
# each one's source page. Writes OUT/ncu_stalls.txt (the two stall tables) and OUT/ncu.tgz.
# Build here (nvcc, no GPU):  bench/experiments/13_staged/2_ncu.sh build
# Run on the H200 (one call): bench/experiments/13_staged/2_ncu.sh run OUT   (about 2 minutes)
set -eu
cd "$(dirname "$0")/../../.."
case ${1:-} in
build)
    mkdir -p build/v13/flat build/v13/staged
    patch -s -o build/v13/staged.cu steps/13_backward_wgmma/attention.cu \
        bench/experiments/12_backward/variants/staged_branch_free.patch
    cp build/steps/13_backward_wgmma.so build/v13/flat/13_backward_wgmma.so
    ${NVCC:-/usr/local/cuda/bin/nvcc} -O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC -cudart shared \
        -Xlinker -rpath=/usr/local/cuda/lib64 -Icommon -gencode arch=compute_90a,code=sm_90a \
        -o build/v13/staged/13_backward_wgmma.so build/v13/staged.cu
    ;;
run)
    o=$2; w=$o/ncu; mkdir -p "$w"
    for v in flat staged; do
        ATTN_STEPS_DIR=build/v13/$v ncu --clock-control none --set full --import-source yes \
            -k regex:bwd_main -c 1 -o "$w/$v" build/attn run --step 13 --shape 4,8,4096,4096,128 \
            --backward --reps 1 > "$w/$v.log" 2>&1
        ncu -i "$w/$v.ncu-rep" --page source --csv --print-source sass > "$w/$v.source.csv" 2>/dev/null
        { echo "## $v"; python3 bench/experiments/12_backward/stalls.py "$w/$v.source.csv" 24; echo; } \
            >> "$o/ncu_stalls.txt"
    done
    gzip -f "$w"/*.source.csv
    tar czf "$o/ncu.tgz" -C "$w" .
    rm -rf "$w"
    ;;
*) echo "usage: $0 build | run OUT" >&2; exit 2 ;;
esac
