#!/usr/bin/env bash
# Run 2026-12-01 (ab.csv, experiment 5_variants). Three differences between
# step 12 and FlashAttention-4's sm90 forward, which is 1-8 % faster at D = 128 (note 12, "The bars
# it misses"), as builds of step 12 (var2.patch: -D flags, all 0 = step 12's PTX):
#   kfirst         the producer loads K_{j+1} before V_j, the order the consumers need them in
#                  (FA4's order); step 12 loads K_j then V_j
#   bc128          D = 128 non-causal with 128-key tiles (FA4's) instead of 176 / 160
#   grid128        bc128 on a plain grid, one block per work tile, no persistence, no stream-K
#                  (FA4's sm90 grid)
#   grid128_kfirst both
# Build here (nvcc, no GPU):  bench/experiments/12_three_warpgroups/4_variants.sh build
# Run on the H200 (one call): bench/experiments/12_three_warpgroups/4_variants.sh run OUT
#   checks.txt: each build's checked runs on four ragged shapes; ab_fwd.csv: launch by launch
#   (../tools/ab.c), the eight bar shapes, 3 rounds of 15
set -eu
cd "$(dirname "$0")/../../.."
case ${1:-} in
build)
    mkdir -p build/ab build/v12
    patch -s -o build/v12/var2.cu steps/12_three_warpgroups/attention.cu \
        bench/experiments/12_three_warpgroups/var2.patch
    for v in "0 0 0 base" "1 0 0 kfirst" "0 1 0 bc128" "0 1 1 grid128" "1 1 1 grid128_kfirst"; do
        set -- $v
        ${NVCC:-/usr/local/cuda/bin/nvcc} -O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC -cudart shared \
            -Xlinker -rpath=/usr/local/cuda/lib64 -Icommon -gencode arch=compute_90a,code=sm_90a \
            -DV_KFIRST=$1 -DV_BC128=$2 -DV_NONPERSIST=$3 -o build/ab/v12_$4.so build/v12/var2.cu
    done
    gcc -O2 -std=c11 -D_GNU_SOURCE -Icommon -I/usr/local/cuda/include -o build/ab/ab \
        bench/experiments/tools/ab.c build/libharness.a -L/usr/local/cuda/lib64 \
        -Wl,-rpath,/usr/local/cuda/lib64 -lcudart -ldl -lm
    ;;
run)
    o=$2
    sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
    # each build checked first on ragged shapes (attn run: the fp64 reference, exit 1 if wrong)
    for v in base kfirst bc128 grid128 grid128_kfirst; do
        mkdir -p build/v12dir/$v && cp build/ab/v12_$v.so build/v12dir/$v/12_three_warpgroups.so
        for s in "1,140,130,1000,128" "2,3,1000,777,64 --causal" "1,133,1,3000,128" "2,8,1200,1200,128"; do
            ATTN_STEPS_DIR=build/v12dir/$v timeout 60 build/attn run --step 12 --shape $s --reps 1 \
                2>&1 | grep -E "^check" | sed "s/^/$v $s: /"
        done
    done > "$o/checks.txt"
    timeout 400 build/ab/ab --rounds 3 --reps 15 $sh8 build/ab/v12_base.so build/ab/v12_kfirst.so \
        build/ab/v12_bc128.so build/ab/v12_grid128.so build/ab/v12_grid128_kfirst.so > "$o/ab_fwd.csv"
    ;;
*) echo "usage: $0 build | run OUT" >&2; exit 2 ;;
esac
