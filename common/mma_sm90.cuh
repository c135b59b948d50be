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
 * wgmma_bf16<N>::ss_mn(d, a, b, acc): the same with both MN-major (imm-trans-a = imm-trans-b = 1:
 * A stored [K][M], B stored [K][N]; step 13's dQ = dS K, from dS^T and K as they sit in smem).
 * wgmma_bf16<N>::rs_mn(d, a, b, acc): the same with A from registers (the fragment above) and B
 * MN-major (B's rows, the K index, have N contiguous: the transpose bit, imm-trans-b = 1).
 * bf16 in, fp32 accumulate; both only start the product (see wgmma_commit / wgmma_wait).
 * N is any multiple of 16 from 16 to 256 (the instruction also takes the multiples of 8 between;
 * this header makes the 16s); d has N/2 registers per thread.
 *
 * The instruction lists every accumulator register by name, so each N is its own asm text. For
 * N = 64, ss is
 *     setp.ne.b32 p, %34, 0;                              scale-d = (acc != 0)
 *     wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
 *         {%0, %1, ..., %31}, %32, %33, p, 1, 1, %35, %36; D, A desc, B desc, scale-d,
 *                                                         scale-a, scale-b, trans-a, trans-b
 * on the operands "+f"(d[0]) .. "+f"(d[31]), "l"(a), "l"(b), "r"(acc) (the last two numbers, the
 * transpose bits, are "n" operands %35 and %36, printed as the immediates 0 or 1); and rs_mn is
 *         {%0, ..., %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;
 *                                           D, A's 4 registers, B desc, scale-d, scale-a, scale-b,
 *                                           trans-b
 * on "+f"(d[0]) .. "+f"(d[31]), "r"(a[0]) .. "r"(a[3]), "l"(b), "r"(acc), the setp reading %37.
 *
 * Each of the two (ss_mn is ss<1, 1>) is written once, in WGMMA_BF16(N) below, and the preprocessor writes the
 * numbered lists. (A template cannot: nvcc's inline asm takes neither a parameter pack expanded
 * into its operand list nor named operands, and its text must be one string literal.) The numbers
 * come from a table with one row per 16 columns of D, i.e. per 8 accumulator registers:
 *   WGMMA_FROM_n(M)      is M(n/2, ..., n/2 + 7): the registers of columns n .. n + 15 (for S,
 *                        the P fragment of keys n .. n + 15, above), and the numbers of the
 *                        operands that follow the accumulators of an N = n product;
 *   WGMMA_BELOW_n(F, M)  is the rows of 0 .. n/2 - 1, the first through F, the others through M;
 * the formatters F and M make a row into asm text ("%0, %1, ...") or operands ("+f"(d[0]), ...),
 * M with the separator in front. */
#define WGMMA_FROM_0(M)   M(0, 1, 2, 3, 4, 5, 6, 7)
#define WGMMA_FROM_16(M)  M(8, 9, 10, 11, 12, 13, 14, 15)
#define WGMMA_FROM_32(M)  M(16, 17, 18, 19, 20, 21, 22, 23)
#define WGMMA_FROM_48(M)  M(24, 25, 26, 27, 28, 29, 30, 31)
#define WGMMA_FROM_64(M)  M(32, 33, 34, 35, 36, 37, 38, 39)
#define WGMMA_FROM_80(M)  M(40, 41, 42, 43, 44, 45, 46, 47)
#define WGMMA_FROM_96(M)  M(48, 49, 50, 51, 52, 53, 54, 55)
#define WGMMA_FROM_112(M) M(56, 57, 58, 59, 60, 61, 62, 63)
#define WGMMA_FROM_128(M) M(64, 65, 66, 67, 68, 69, 70, 71)
#define WGMMA_FROM_144(M) M(72, 73, 74, 75, 76, 77, 78, 79)
#define WGMMA_FROM_160(M) M(80, 81, 82, 83, 84, 85, 86, 87)
#define WGMMA_FROM_176(M) M(88, 89, 90, 91, 92, 93, 94, 95)
#define WGMMA_FROM_192(M) M(96, 97, 98, 99, 100, 101, 102, 103)
#define WGMMA_FROM_208(M) M(104, 105, 106, 107, 108, 109, 110, 111)
#define WGMMA_FROM_224(M) M(112, 113, 114, 115, 116, 117, 118, 119)
#define WGMMA_FROM_240(M) M(120, 121, 122, 123, 124, 125, 126, 127)
#define WGMMA_FROM_256(M) M(128, 129, 130, 131, 132, 133, 134, 135)

#define WGMMA_BELOW_16(F, M)  WGMMA_FROM_0(F)
#define WGMMA_BELOW_32(F, M)  WGMMA_BELOW_16(F, M) WGMMA_FROM_16(M)
#define WGMMA_BELOW_48(F, M)  WGMMA_BELOW_32(F, M) WGMMA_FROM_32(M)
#define WGMMA_BELOW_64(F, M)  WGMMA_BELOW_48(F, M) WGMMA_FROM_48(M)
#define WGMMA_BELOW_80(F, M)  WGMMA_BELOW_64(F, M) WGMMA_FROM_64(M)
#define WGMMA_BELOW_96(F, M)  WGMMA_BELOW_80(F, M) WGMMA_FROM_80(M)
#define WGMMA_BELOW_112(F, M) WGMMA_BELOW_96(F, M) WGMMA_FROM_96(M)
#define WGMMA_BELOW_128(F, M) WGMMA_BELOW_112(F, M) WGMMA_FROM_112(M)
#define WGMMA_BELOW_144(F, M) WGMMA_BELOW_128(F, M) WGMMA_FROM_128(M)
#define WGMMA_BELOW_160(F, M) WGMMA_BELOW_144(F, M) WGMMA_FROM_144(M)
#define WGMMA_BELOW_176(F, M) WGMMA_BELOW_160(F, M) WGMMA_FROM_160(M)
#define WGMMA_BELOW_192(F, M) WGMMA_BELOW_176(F, M) WGMMA_FROM_176(M)
#define WGMMA_BELOW_208(F, M) WGMMA_BELOW_192(F, M) WGMMA_FROM_192(M)
#define WGMMA_BELOW_224(F, M) WGMMA_BELOW_208(F, M) WGMMA_FROM_208(M)
#define WGMMA_BELOW_240(F, M) WGMMA_BELOW_224(F, M) WGMMA_FROM_224(M)
#define WGMMA_BELOW_256(F, M) WGMMA_BELOW_240(F, M) WGMMA_FROM_240(M)

/* The row formatters: the text "%0, %1, ..." and the operands "+f"(d[0]), "+f"(d[1]), ... */
#define WGMMA_PCT(r0, r1, r2, r3, r4, r5, r6, r7)                                                  \
    "%" #r0 ", %" #r1 ", %" #r2 ", %" #r3 ", %" #r4 ", %" #r5 ", %" #r6 ", %" #r7
#define WGMMA_PCT_NEXT(r0, r1, r2, r3, r4, r5, r6, r7)                                             \
    ", " WGMMA_PCT(r0, r1, r2, r3, r4, r5, r6, r7)
#define WGMMA_D(r0, r1, r2, r3, r4, r5, r6, r7)                                                    \
    "+f"(d[r0]), "+f"(d[r1]), "+f"(d[r2]), "+f"(d[r3]), "+f"(d[r4]), "+f"(d[r5]), "+f"(d[r6]),     \
        "+f"(d[r7])
#define WGMMA_D_NEXT(r0, r1, r2, r3, r4, r5, r6, r7) , WGMMA_D(r0, r1, r2, r3, r4, r5, r6, r7)
/* ... and the operands after the accumulators, k0 = N/2: ss has A desc, B desc, acc and the two
 * transpose bits (k0..k0+4), rs_mn has A's 4 registers, B desc, acc (k0..k0+5). */
#define WGMMA_SS_AB(k0, k1, k2, k3, k4, k5, k6, k7) "%" #k0 ", %" #k1
#define WGMMA_SS_ACC(k0, k1, k2, k3, k4, k5, k6, k7) "%" #k2
#define WGMMA_SS_TRANS(k0, k1, k2, k3, k4, k5, k6, k7) "%" #k3 ", %" #k4
#define WGMMA_RS_AB(k0, k1, k2, k3, k4, k5, k6, k7)                                                \
    "{%" #k0 ", %" #k1 ", %" #k2 ", %" #k3 "}, %" #k4
#define WGMMA_RS_ACC(k0, k1, k2, k3, k4, k5, k6, k7) "%" #k5

/* wgmma_bf16<N> with its two instruction families: SS, both operands from shared memory, each
 * K-major or MN-major by its transpose bit (immediates in the instruction, so template arguments
 * passed as "n" operands: ss<0, 0> K-major, ss<1, 1> = ss_mn both MN-major), and RS, A from
 * registers and B MN-major. */
#define WGMMA_BF16(N)                                                                              \
    template <> struct wgmma_bf16<N> {                                                             \
        template <int TRANS_A = 0, int TRANS_B = 0>                                                \
        static __device__ __forceinline__ void ss(float (&d)[N / 2], uint64_t a, uint64_t b,       \
                                                  int acc)                                         \
        {                                                                                          \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " WGMMA_FROM_##N(WGMMA_SS_ACC) ", 0;\n" \
                         "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 "               \
                         "{" WGMMA_BELOW_##N(WGMMA_PCT, WGMMA_PCT_NEXT) "}, "                      \
                         WGMMA_FROM_##N(WGMMA_SS_AB) ", p, 1, 1, "                                 \
                         WGMMA_FROM_##N(WGMMA_SS_TRANS) ";\n}\n"                                   \
                         : WGMMA_BELOW_##N(WGMMA_D, WGMMA_D_NEXT)                                  \
                         : "l"(a), "l"(b), "r"(acc), "n"(TRANS_A), "n"(TRANS_B)                    \
                         : "memory");                                                              \
        }                                                                                          \
        static __device__ __forceinline__ void ss_mn(float (&d)[N / 2], uint64_t a, uint64_t b,    \
                                                     int acc)                                      \
        {                                                                                          \
            ss<1, 1>(d, a, b, acc);                                                                \
        }                                                                                          \
        static __device__ __forceinline__ void rs_mn(float (&d)[N / 2], const uint32_t (&a)[4],    \
                                                     uint64_t b, int acc)                          \
        {                                                                                          \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " WGMMA_FROM_##N(WGMMA_RS_ACC) ", 0;\n" \
                         "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 "               \
                         "{" WGMMA_BELOW_##N(WGMMA_PCT, WGMMA_PCT_NEXT) "}, "                      \
                         WGMMA_FROM_##N(WGMMA_RS_AB) ", p, 1, 1, 1;\n}\n"                          \
                         : WGMMA_BELOW_##N(WGMMA_D, WGMMA_D_NEXT)                                  \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc)            \
                         : "memory");                                                              \
        }                                                                                          \
    };

template <int N> struct wgmma_bf16 {
    static_assert(N % 16 == 0 && N >= 16 && N <= 256,
                  "wgmma_bf16<N>: N is a multiple of 16 from 16 to 256 (m64nNk16; the table "
                  "above would need rows of 4 for the multiples of 8 between)");
};
WGMMA_BF16(16)  WGMMA_BF16(32)  WGMMA_BF16(48)  WGMMA_BF16(64)
WGMMA_BF16(80)  WGMMA_BF16(96)  WGMMA_BF16(112) WGMMA_BF16(128)
WGMMA_BF16(144) WGMMA_BF16(160) WGMMA_BF16(176) WGMMA_BF16(192)
WGMMA_BF16(208) WGMMA_BF16(224) WGMMA_BF16(240) WGMMA_BF16(256)

/* ------------------------------------------------------------------------------------------
 * The pipeline's pieces: mbarriers and TMA loads (step 08), register reallocation (step 09), named
 * barriers (step 10).
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

/* Register reallocation (sm_90a; step 09): every thread of the WARPGROUP executing it sets its register
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

/* Named barriers 1..15 (0 is __syncthreads; step 10): bar.sync waits until `threads` threads (a multiple
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

/* ------------------------------------------------------------------------------------------
 * Step 13's additions (the backward): bulk copies, without a tensor map, of contiguous bytes.
 *
 * cp.async.bulk: `bytes` contiguous bytes global -> shared (both 16-byte aligned, bytes a multiple
 * of 16), completion signalled on an mbarrier like a TMA tile load. */
__device__ __forceinline__ void bulk_load(uint32_t dst, const void *src, uint32_t bytes,
                                          uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* stmatrix .x4, ldmatrix_x4's inverse: four 8 x 8 bf16 matrices to shared memory in one
 * instruction. Thread l holds in r[k] the pair (row l / 4, columns 2 (l % 4), +1) of matrix k (an
 * mma accumulator's layout) and gives the address of row l % 8 of matrix l / 8 (16 bytes). */
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, const uint32_t (&r)[4])
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                 "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}

/* cp.reduce.async.bulk .add.f32: global[i] += shared[i] for `bytes` contiguous bytes of fp32, done
 * by the memory system (L2) as one bulk operation: what a block adds into a tensor that other
 * blocks add into too (the backward's dQ), without a thread issuing an atomic per element. The
 * shared bytes must not change until bulk_wait_read says they have been read. */
__device__ __forceinline__ void bulk_reduce_add_f32(float *dst, uint32_t src, uint32_t bytes)
{
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
                     dst),
                 "r"(src), "r"(bytes)
                 : "memory");
}
/* Close the bulk operations issued so far by this thread into a group; wait until at most n
 * groups are still reading shared memory (_read) or still running at all. */
__device__ __forceinline__ void bulk_commit()
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
template <int n> __device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(n) : "memory");
}
template <int n> __device__ __forceinline__ void bulk_wait()
{
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(n) : "memory");
}

#endif
