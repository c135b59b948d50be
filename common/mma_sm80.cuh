/* mma_sm80.cuh: the PTX wrappers the tensor-core steps use (introduced by step 03, sm_80+).
 *
 * Each is one instruction; read them once, then read the kernels. Fragment layouts of
 * mma.m16n8k16 (PTX ISA, "Matrix fragments for mma.m16n8k16"), with g = lane / 4, t = lane % 4:
 *   A (16x16, row-major), 4 regs of 2 bf16: a0 = A[g][2t..2t+1],   a1 = A[g+8][2t..2t+1],
 *                                           a2 = A[g][2t+8..+9],   a3 = A[g+8][2t+8..+9]
 *   B (16x8, "col-major"), 2 regs:          b0 = B[2t..2t+1][g],   b1 = B[2t+8..2t+9][g]
 *   C (16x8, fp32), 4 regs:                 c0,c1 = C[g][2t..2t+1], c2,c3 = C[g+8][2t..2t+1]
 * So a C fragment of S (two 16x8 tiles side by side) is, packed to bf16, exactly an A fragment of
 * P for the next product: the FlashAttention-2 register trick.
 */
#ifndef ATTN_MMA_SM80_CUH
#define ATTN_MMA_SM80_CUH

#include <cuda_bf16.h>
#include <stdint.h>

/* Shared-memory address as the 32-bit value PTX's .shared instructions take. */
__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* c += a * b: one 16x8x16 tensor-core product, bf16 in, fp32 accumulate. */
__device__ __forceinline__ void mma_bf16_16816(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Four 8x8 b16 matrices from shared memory; lane L gives the address of row L % 8 of matrix
 * L / 8, and receives in r[i] its part of matrix i (the A/B fragment layout above). */
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* The same, each 8x8 matrix transposed on the way: how V (keys x features, row-major) becomes
 * the "col-major" B operand of P V without a transpose in memory. */
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* 16 bytes global -> shared without passing through registers; when !pred the 16 bytes are
 * zero-filled (src-size 0) and global memory is not read: how ragged tiles load safely. */
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, bool pred)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 ::"r"(dst), "l"(src), "r"(pred ? 16 : 0));
}
/* The same for 4 bytes (cp.async.ca: 4 and 8 bytes go through L1), for fp32 vectors whose rows
 * are not 16-byte aligned (lse and Di of a query tile, step 06); !pred zero-fills. */
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void *src, bool pred)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 ::"r"(dst), "l"(src), "r"(pred ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
/* Wait until at most n of this thread's committed groups are still in flight. */
template <int n> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(n));
}

/* Two floats -> one register of two bf16 (lo in the low half), round to nearest even. */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* 2^x on the special-function unit (MUFU.EX2): ~2 ulp, ex2(-inf) = +0. */
__device__ __forceinline__ float ex2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

#endif
