#!/usr/bin/env bash
# Step 12's wgmma descriptors built once per tile and advanced by constants, against step 12 as
# committed (which builds each k-slice's descriptor from its shared address: ptxas then spends
# ~60 uniform-datapath instructions and 16 R2UR moves per loop iteration at D = 128, 645
# instructions where FlashAttention-4's loop has 455 for 128 keys; FA4's SASS in ../12_fa4_sass).
# Builds (here, `run.sh build`, from step 12 as it was at 3f6f2a2, before it took both changes:
# the patches apply to that file, which `git show` writes into build/v12d/base.cu):
#   base          the step as committed
#   desc          issue_qk / issue_pv: one descriptor per operand tile, + (offset >> 4) per k-slice
#   descu         desc, and q_wg from a warp-uniform warpgroup index (__shfl_sync of wg, lane 0),
#                 so that ptxas keeps the descriptors in uniform registers: no R2UR in the loop
#   pin160        var3.patch's V_PIN=1 V_BC=160 (../12_three_warpgroups: the softmax held between
#                 the two waits)
#   descu_pin160  both
# On the H200 (`run.sh run OUT`, carrying build/steps, build/attn, build/v12d, build/v15/ab,
# .device-libs): each build checked on six ragged shapes (attn run against the fp64 reference,
# ATTN_STEPS_DIR), then launch by launch at the eight bar shapes, 3 rounds of 10 (ab.csv), then
# Nsight Compute on base and descu at 4,8,4096,4096,128 (ncu.txt).
set -u
cd "$(dirname "$0")/../../.."
X=bench/experiments/12_descriptors
B="base desc descu pin160 descu_pin160"
case ${1:-} in
build)
    set -e
    make -s
    d=build/v12d; mkdir -p $d
    F="-O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC,-Wall,-Wextra,-Werror -Werror all-warnings -cudart shared -Xlinker -rpath=/usr/local/cuda/lib64 -Icommon -gencode arch=compute_90a,code=sm_90a"
    git show 3f6f2a2:steps/12_three_warpgroups/attention.cu >$d/base.cu
    patch -s -o $d/desc.cu $d/base.cu $X/desc.patch
    patch -s -o $d/descu.cu $d/desc.cu $X/uniform.patch
    patch -s -o $d/pin.cu $d/base.cu bench/experiments/12_three_warpgroups/var3.patch
    patch -s -o $d/descu_pin.cu $d/descu.cu bench/experiments/12_three_warpgroups/var3.patch
    /usr/local/cuda/bin/nvcc $F -o $d/base.so $d/base.cu
    /usr/local/cuda/bin/nvcc $F -o $d/desc.so $d/desc.cu
    /usr/local/cuda/bin/nvcc $F -o $d/descu.so $d/descu.cu
    /usr/local/cuda/bin/nvcc $F -DV_PIN=1 -DV_BC=160 -o $d/pin160.so $d/pin.cu
    /usr/local/cuda/bin/nvcc $F -DV_PIN=1 -DV_BC=160 -o $d/descu_pin160.so $d/descu_pin.cu
    for v in $B; do mkdir -p $d/dir_$v && cp $d/$v.so $d/dir_$v/12_three_warpgroups.so; done
    ls -la $d/*.so
    ;;
run)
    o=${2:?usage: run.sh run OUT}; mkdir -p $o
    for v in $B; do
        for s in "1,140,130,1000,128" "1,133,1,3000,128" "2,8,1200,1200,128" "2,4,777,1000,128 --causal" \
                 "3,16,1100,333,64" "2,3,1000,777,64 --causal"; do
            ATTN_STEPS_DIR=build/v12d/dir_$v timeout 60 build/attn run --step 12 --shape $s --reps 1 \
                2>&1 | grep -E "^check" | sed "s/^/$v $s: /"
        done
    done >$o/checks.txt
    echo "checks: $(grep -c PASS $o/checks.txt) PASS, $(grep -c FAIL $o/checks.txt) FAIL"
    sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
    so=""; for v in $B; do so="$so build/v12d/$v.so"; done
    timeout 300 build/v15/ab --rounds 3 --reps 10 $sh8 $so >$o/ab.csv 2>$o/ab.log
    M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed
    for v in base descu; do
        echo "=== $v 4,8,4096,4096,128"
        ATTN_STEPS_DIR=build/v12d/dir_$v timeout 90 ncu --clock-control none --metrics $M -k regex:attention_fwd -c 1 \
            build/attn run --step 12 --shape 4,8,4096,4096,128 --reps 1 2>&1 | grep -vE "==PROF==|==WARNING==|Warning:"
    done >$o/ncu.txt 2>&1
    ;;
*) sed -n 2,20p "$0"; exit 2 ;;
esac
