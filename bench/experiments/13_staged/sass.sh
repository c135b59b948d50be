#!/usr/bin/env bash
# The SASS counts that note 13 and this folder's README quote, from the sources as committed:
#   before     the backward before any mask of the keys past Nk (step 12's file at 63f7a92^, with
#              that commit's common/)
#   flat       step 13 as it is (the shifted-keys mask)
#   staged     the staged form with the mask branch-free (../12_backward/variants/staged_branch_free.patch)
# For bwd_main<64> and bwd_main<128>: instructions, local loads and stores (LDL, STL: spills),
# BSSY (divergent-branch reconvergence), UIMAD and UISETP. (The staged form with its mask as
# `if (mask)`, whose 16 BSSY blocks the README names, was read the same way from its patch of the time.) Needs nvcc and a cuobjdump (CUDA's, or
# the one in the triton wheel: pip download --no-deps triton; unzip 'triton/backends/nvidia/bin/*').
# usage: bench/experiments/13_staged/sass.sh > bench/experiments/13_staged/sass.txt
set -eu
cd "$(dirname "$0")/../../.."
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/old"
git archive 63f7a92^ common | tar x -C "$t/old"
git show 63f7a92^:steps/12_backward_wgmma/attention.cu > "$t/before.cu"
cp steps/13_backward_wgmma/attention.cu "$t/flat.cu"
git show e07a8a5:steps/13_backward_wgmma/attention.cu > "$t/e07.cu"
patch -s -o "$t/staged.cu" "$t/e07.cu" bench/experiments/12_backward/variants/staged_branch_free.patch
for v in before flat staged; do
    inc=common; [ $v = before ] && inc=$t/old/common
    "$NVCC" -O3 -std=c++17 -I"$inc" -Icommon -gencode arch=compute_90a,code=sm_90a -cubin \
        -o "$t/$v.cubin" "$t/$v.cu"
    for d in 64 128; do
        "$CUOBJDUMP" -sass -fun "_Z8bwd_mainILi${d}EEv14CUtensorMap_stS0_S0_S0_PKfS2_PfP13__nv_bfloat16S5_iiiffii" \
            "$t/$v.cubin" > "$t/s"
        printf '%-10s bwd_main<%3d>: %5d instructions, LDL %2d, STL %2d, BSSY %2d, UIMAD %2d, UISETP %2d\n' \
            $v $d "$(grep -c '^ *\/\*[0-9a-f]*\*\/' "$t/s")" "$(grep -c ' LDL' "$t/s")" \
            "$(grep -c ' STL' "$t/s")" "$(grep -c 'BSSY' "$t/s")" "$(grep -c ' UIMAD' "$t/s")" \
            "$(grep -c ' UISETP' "$t/s")"
    done
done
