/* mma_sm90.cuh: the PTX wrappers the Hopper steps use (introduced by step 07, sm_90a only).
 *
 * Each is one instruction (or one fence); read them once, then read the kernels. Compile with
 * -gencode arch=compute_90a,code=sm_90a: wgmma exists only on the "a" target.
 *
 * wgmma.mma_async: a WARPGROUP (4 consecutive warps, 128 threads, first warp index % 4 == 0)
 * computes D[64 x N] (+)= A[64 x 16] B[16 x N] in one instruction, asynchronously: the
 * instruction only starts the tensor cores, and the result is in D's registers after
 * wgmma.commit_group + wgmma.wait_group. A comes from shared memory (a descriptor) or from
 * registers; B always from shared memory.
 *
 * Accumulator D (fp32, N/2 registers per thread), PTX ISA "wgmma 64NxK register fragments";
 * warp w = (thread % 128) / 32 owns rows 16w..16w+15, and with g = lane / 4, t = lane % 4:
 *     d[4j + 2a + b] = D[16w + g + 8a][8j + 2t + b]      j < N/8, a, b in {0, 1}
 * i.e. each warp holds the m16n8 C fragments of mma.sync (mma_sm80.cuh) for its 16 rows, n8
 * block after n8 block. A from registers (bf16, 4 registers per thread) is likewise the m16n8k16
 * A fragment of the warp's 16 rows:
 *     a[0] = A[16w+g][2t..2t+1],   a[1] = A[16w+g+8][2t..2t+1],
 *     a[2] = A[16w+g][2t+8..2t+9], a[3] = A[16w+g+8][2t+8..2t+9]
 * so d[8k .. 8k+7] of an S = Q K^T accumulator, packed pairwise to bf16, is exactly the A
 * fragment of P for keys 16k..16k+15: P never leaves the registers (FlashAttention-3).
 *
 * Shared-memory operands are described by a 64-bit matrix descriptor (wgmma_desc below) and must
 * sit in one of the canonical layouts. The steps use only the 128-byte swizzle: an "atom" is 8
 * rows of 128 bytes (64 bf16), 1024 bytes aligned to 1024, and the 16-byte chunk c of row r is
 * stored at chunk position c ^ (r % 8) (sw128_offset). Wider rows are split into 64-column atoms.
 */
#ifndef ATTN_MMA_SM90_CUH
#define ATTN_MMA_SM90_CUH

#include <cuda_bf16.h>
#include <stdint.h>

/* Byte offset of (row r, 16-byte chunk c in 0..7) inside a tile of 128-byte rows laid out in the
 * 128-byte swizzle. The tile must start 1024-byte aligned: the hardware XORs address bits 4-6
 * with bits 7-9 of the full shared address, so the pattern is tied to absolute 1024-byte lines. */
__host__ __device__ constexpr uint32_t sw128_offset(uint32_t r, uint32_t c)
{
    return r * 128u + ((c ^ (r & 7u)) << 4);
}

/* The matrix descriptor of a 128-byte-swizzled operand at shared address addr (PTX ISA,
 * "Matrix Descriptor Format"): bits 0-13 addr >> 4, 16-29 leading-dimension byte offset >> 4,
 * 32-45 stride-dimension byte offset >> 4, 49-51 base offset (0: atoms 1024-aligned),
 * 62-63 swizzle mode (1 = 128-byte). What LBO and SBO mean depends on the operand's major-ness:
 *   K-major (rows of K contiguous, e.g. Q and K for S = Q K^T): SBO = 1024, the step from one
 *     8-row group to the next; LBO is unused (the K extent of one wgmma, 16 elements = 32 bytes,
 *     stays inside one 128-byte row). Step along K by adding 32 bytes to addr.
 *   MN-major (rows of N contiguous, e.g. V [keys, D] as the B of O = P V): SBO = 1024, the step
 *     from 8 K-rows to the next 8; LBO = the step from one 64-column atom to the next along N.
 *     Step along K (16 rows) by adding 16 * 128 bytes to addr. */
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | (uint64_t)((lbo >> 4) & 0x3FFFu) << 16 |
           (uint64_t)((sbo >> 4) & 0x3FFFu) << 32 | (uint64_t)1 << 62;
}

/* Before the first wgmma that reads registers (accumulator or A) written by ordinary
 * instructions: orders those writes before the asynchronous reads. Warpgroup-wide. */
__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

/* Closes the wgmmas issued since the last commit into one group, waited on as a unit. */
__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Wait until at most n committed groups are still running (groups complete in order); after it,
 * the accumulators of the older groups may be read and their A registers and smem reused. */
template <int n> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory");
}

/* Compiler-only fence on registers that an in-flight wgmma owns: keeps the compiler from moving
 * reads or writes of them across this point (CUTLASS's warpgroup_fence_operand). No instruction. */
template <int n> __device__ __forceinline__ void reg_fence(float (&r)[n])
{
#pragma unroll
    for (int i = 0; i < n; i++)
        asm volatile("" : "+f"(r[i])::"memory");
}
template <int n> __device__ __forceinline__ void reg_fence(uint32_t (&r)[n])
{
#pragma unroll
    for (int i = 0; i < n; i++)
        asm volatile("" : "+r"(r[i])::"memory");
}

/* Shared memory written through the generic proxy (st.shared, cp.async) and read next by the
 * async proxy (wgmma, TMA stores): each writing thread fences, then the block synchronizes. */
__device__ __forceinline__ void fence_proxy_async_smem()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* wgmma_bf16<N>::ss(d, a, b, acc): d[64 x N] = (acc ? d : 0) + A B, A (64 x 16) and B (16 x N)
 * from shared memory through descriptors, both K-major (A rows and B columns have K contiguous).
 * wgmma_bf16<N>::rs_mn(d, a, b, acc): the same with A from registers (the fragment above) and B
 * MN-major (B's rows, the K index, have N contiguous: the transpose bit, imm-trans-b = 1).
 * bf16 in, fp32 accumulate; both only start the product (see wgmma_commit / wgmma_wait). */
template <int N> struct wgmma_bf16;

template <> struct wgmma_bf16<64> {
    static __device__ __forceinline__ void ss(float (&d)[32], uint64_t a, uint64_t b, int acc)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "%32, %33, p, 1, 1, 0, 0;\n}\n"
            :
              "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
              "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
              "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
              "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
              "+f"(d[30]), "+f"(d[31])
            : "l"(a), "l"(b), "r"(acc)
            : "memory");
    }
    static __device__ __forceinline__ void rs_mn(float (&d)[32], const uint32_t (&a)[4], uint64_t b,
                                                 int acc)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
            :
              "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
              "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
              "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
              "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
              "+f"(d[30]), "+f"(d[31])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc)
            : "memory");
    }
};

template <> struct wgmma_bf16<128> {
    static __device__ __forceinline__ void ss(float (&d)[64], uint64_t a, uint64_t b, int acc)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
            " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
            " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "%64, %65, p, 1, 1, 0, 0;\n}\n"
            :
              "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
              "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
              "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
              "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
              "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
              "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
              "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
              "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
              "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(a), "l"(b), "r"(acc)
            : "memory");
    }
    static __device__ __forceinline__ void rs_mn(float (&d)[64], const uint32_t (&a)[4], uint64_t b,
                                                 int acc)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
            " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
            " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
            :
              "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
              "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
              "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
              "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
              "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
              "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
              "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
              "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
              "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc)
            : "memory");
    }
};

/* Wider S tiles for step 08 (Bc keys per tile, N = Bc): the same ss product, 80 / 88 / 96
 * accumulator registers per thread. */
template <> struct wgmma_bf16<160> {
    static __device__ __forceinline__ void ss(float (&d)[80], uint64_t a, uint64_t b, int acc)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
            " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
            " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
            " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}, "
            "%80, %81, p, 1, 1, 0, 0;\n}\n"
            :
              "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
              "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
              "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
              "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
              "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
              "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
              "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
              "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
              "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
              "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
              "+f"(d[78]), "+f"(d[79])
            : "l"(a), "l"(b), "r"(acc)
            : "memory");
    }
};

template <> struct wgmma_bf16<176> {
    static __device__ __forceinline__ void ss(float (&d)[88], uint64_t a, uint64_t b, int acc)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
            " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
            " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
            " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
            " %80, %81, %82, %83, %84, %85, %86, %87}, "
            "%88, %89, p, 1, 1, 0, 0;\n}\n"
            :
              "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
              "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
              "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
              "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
              "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
              "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
              "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
              "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
              "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
              "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
              "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
              "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
            : "l"(a), "l"(b), "r"(acc)
            : "memory");
    }
};

template <> struct wgmma_bf16<192> {
    static __device__ __forceinline__ void ss(float (&d)[96], uint64_t a, uint64_t b, int acc)
    {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
            " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
            " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
            " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
            " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
            " %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, "
            "%96, %97, p, 1, 1, 0, 0;\n}\n"
            :
              "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
              "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
              "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
              "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
              "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
              "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
              "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
              "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
              "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
              "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
              "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
              "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]),
              "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
            : "l"(a), "l"(b), "r"(acc)
            : "memory");
    }
};

/* ------------------------------------------------------------------------------------------
 * Step 08's additions: mbarriers, TMA loads, register reallocation, named barriers.
 *
 * mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier"): a
 * 64-bit object in shared memory holding a phase bit, a pending-arrival count and a transaction
 * (tx) count. A phase completes when both counts reach zero; the barrier then flips its phase
 * bit and reloads the arrival count from init. try_wait.parity(P) returns true once the phase
 * whose parity is P has completed, i.e. while the current phase's parity is !P: on a fresh
 * barrier (phase 0 running) parity 1 counts as "already complete". A user of stage s for the
 * n-th time (n = 0, 1, ...) therefore waits "full" with parity n & 1 and "empty" with parity
 * (n & 1) ^ 1: the first empty wait passes at once, the next one waits for phase 0 to end. */
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/* Makes the mbarrier.init above visible to the other threads and to the async proxy (TMA); a
 * __syncthreads follows it. */
__device__ __forceinline__ void mbar_fence_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* One arrival (release semantics: this thread's earlier accesses happen before the phase ends). */
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar)
                 : "memory");
}

/* One arrival that also expects `bytes` more bytes of asynchronous transactions (TMA) before the
 * phase may complete: the producer calls it once per stage, before the copies it covers. */
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("{\n.reg .b64 state;\n"
                 "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}

/* Spin until the phase of parity `parity` has completed (acquire: what the phase covered, TMA
 * bytes included, is visible afterwards). try_wait may suspend the thread for a while in hardware
 * before it returns false, so the loop does not hammer shared memory. */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

/* TMA: the box at coordinates (c0, c1, c2) of the 3-D tensor described by *map (a
 * __grid_constant__ kernel parameter; c0 is the innermost, contiguous dimension) -> shared memory
 * at dst, laid out as the map says (here the 128-byte swizzle, so dst is 1024-byte aligned).
 * Elements outside the tensor are written as zeros, and the whole box's bytes still count
 * towards bar's transaction count. One thread issues it; completion is signalled on bar only. */
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void *map, int c0, int c1, int c2,
                                            uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

/* Fetch a tensor map (kernel parameter) into the TMA unit's descriptor cache ahead of use. */
__device__ __forceinline__ void tma_prefetch_map(const void *map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

/* Register reallocation (sm_90a): every thread of the WARPGROUP executing it sets its register
 * budget to n (a multiple of 8 in 24..256). dec hands registers back to the SM's pool; inc
 * blocks until the pool has them. Takes effect only under a register cap at entry
 * (__launch_bounds__(threads, 1)); ptxas then allocates the code after it within n. */
template <int n> __device__ __forceinline__ void setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(n));
}
template <int n> __device__ __forceinline__ void setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(n));
}

/* Named barriers 1..15 (0 is __syncthreads): bar.sync waits until `threads` threads (a multiple
 * of 32, counted by warps) have reached barrier id through bar.sync or bar.arrive; bar.arrive
 * counts itself and goes on. A pair of them hands a turn from one warpgroup to the other. */
__device__ __forceinline__ void named_bar_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

#endif
