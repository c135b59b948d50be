/* Step 06: the backward, FlashAttention-2 style.
 *
 * The one idea: the gradients without the N x N matrix. Step 00's backward writes S, P, dP and dS
 * (Nq x Nk each) to HBM; here no N x N tensor ever leaves the chip. P is recomputed tile by tile
 * from S = Q K^T and the lse the forward saved (one exp per score, no max, no sum):
 *     P   = exp(scale S - lse)             = exp2(S scale log2(e) - lse log2(e))
 *     dV  = P^T dO                          dP = dO V^T
 *     dS  = P o (dP - Di),   Di = rowsum(dO o O)
 *     dQ  = scale dS K                      dK = scale dS^T Q
 * Why Di exists: the softmax Jacobian gives dS_ij = P_ij (dP_ij - sum_l P_il dP_il), and that sum
 * over a whole row of keys is not available to a block that owns one tile of keys. But
 * sum_l P_il dP_il = sum_l P_il (dO_i . V_l) = dO_i . (sum_l P_il V_l) = dO_i . O_i: one dot product
 * per query row, computed once by a pre-pass from dO and O, before the main kernel.
 *
 * Who owns what. Three kernels on the stream:
 *   1. bwd_preprocess: Di = rowsum(dO o O) (fp32, [B, H, Nq]) into the workspace, and zeroes the
 *      fp32 dQ accumulator (the workspace is undefined on entry).
 *   2. bwd_main: one block per (tile of Bc = 128 keys, b*h). It keeps its K and V tile in shared
 *      memory and its dK, dV tile in fp32 registers, and loops over the query tiles of Br rows
 *      (causal: from the first tile holding a row >= k0, the first that sees any of its keys).
 *      Per query tile: Q, dO, lse and Di stream in through cp.async, double-buffered (tile i+1
 *      loads while tile i computes). Queries are the rows, and each product splits over the
 *      8 warps its own way (FA2's sm80 warp layouts), every operand read with ldmatrix:
 *        S   = Q K^T         warps 2 (queries) x 4 (keys): Br/2 x 32 each
 *        P   = exp2(...)     in the C registers; masked -> 0 where the key is >= Nk, the
 *                            query row >= Nq, or the key causally hidden (edge tiles only);
 *                            to shared memory in bf16 (sP)
 *        dP  = dO V^T        warps 2 x 4, as S
 *        dS  = P o (dP - Di) in the C registers; to shared memory in bf16 (sdS)
 *        dV += P^T dO        warps 4 (keys) x 2 (features): 32 x D/2 each; A = P^T from sP
 *        dK += dS^T Q        as dV; A = dS^T from sdS
 *        dQ += dS K          warps Br/32 (queries) x 256/Br (features): 32 x 32 each; the fp32
 *                            partial dQ goes to the workspace by atomicAdd
 *      A warp reads only the rows of A and the columns of B that its own sub-tile needs. The
 *      price is P and dS through shared memory. The other way, each warp owning 16 keys and
 *      computing everything transposed (keys as rows, as FA3 does on sm90), feeds P^T and dS^T
 *      from the C registers straight into dV and dK (the FA2 register trick), but then every
 *      warp reads all of Q and dO, twice (plain and .trans): more bytes (the prediction below).
 *      dK and dV are written once at the end (dK times scale).
 *   3. bwd_convert_dq: dQ = scale * accumulator, to bf16.
 * Shared memory: 16-byte chunks of each row XOR-swizzled by (row & 7) (FA2's Swizzle<3,3,3>), so
 * the 8 rows of every ldmatrix matrix land on 8 different bank groups.
 *
 * The dQ choice: atomics. Each dQ element receives ceil(Nk/Bc) fp32 adds, one per key tile, in
 * whatever order the blocks run: fewer passes than the alternatives (Triton's separate dQ loop
 * recomputes P: 7 products instead of 5), but dQ is not bit-reproducible run to run (dK and dV
 * are: one block owns each). A user who needs determinism gives each key tile its own fp32 dQ
 * slice (Nk/Bc times the workspace) and sums them in a fixed order in the convert kernel (FA2's
 * deterministic mode), or serialises the adds per query tile with a semaphore.
 *
 * Tiles (FA2's sm80 choices, 8 warps, 1 block per SM): D = 64: Br x Bc = 128 x 128;
 * D = 128: 64 x 128 (128 x 128 would need 128 fp32 registers of S and dP, 64 x 32 each per warp,
 * on top of the 128 of dK and dV). Shared memory: K, V, 2 x Q, 2 x dO, P, dS, 2 x lse, 2 x Di:
 * 162 KB (D = 64), 161 KB (D = 128). Registers: 254-255 per thread, no spills (ptxas -v).
 *
 * Prediction, per (key tile, query tile) unit at D = 128, Br = 64: 5 products of 2*64*128*128 =
 * 10.5 MFLOP. Shared-memory traffic: per product, 8 warps x (rows of A + columns of B of the
 * warp's sub-tile) x K-depth x 2 bytes:
 *   S, dP    8 x (32 + 32) x 128 x 2 = 128 KB each    dV, dK   8 x (32 + 64) x 64 x 2 = 96 KB each
 *   dQ       8 x (32 + 32) x 128 x 2 = 128 KB         P, dS    stored once: 2 x 64 x 128 x 2 = 32 KB
 * 576 KB of ldmatrix (144 ldmatrix.x4 of 512 B per warp) + 32 KB of stores = 608 KB, 4.9k clocks
 * at 128 B/clock per SM, against ~3.8k clocks of mma.sync at ~2.7k FLOP/clock/SM: shared-memory
 * bound at ~520 TFLOP/s on 132 SMs at 1.83 GHz, before the exps (8k per unit, 0.5k clocks), the
 * atomics (8k fp32 per unit) and the two barriers per unit. D = 64 (Br = 128): S, dP 8 x (64 +
 * 32) x 64 x 2 = 96 KB each, dV, dK 8 x (32 + 32) x 128 x 2 = 128 KB each, dQ 128 KB, P and dS
 * 64 KB: 640 KB, 5.1k clocks, ~495 TFLOP/s, with twice the exps. (Keys as rows, every warp
 * reading all of Q and dO twice: 752 KB at D = 128, 736 KB at D = 64.) SDPA's FA2 backward, this
 * layout, reaches 257 / 280 TFLOP/s at D = 64 / 128, N = 4096: 52-54% of the bound; the same
 * fraction here is ~255-280 TFLOP/s (the bar is 0.8x FA2: 206 / 224).
 *
 * Limits: the backward takes bf16 only (fp32 -> UNSUPPORTED), D in {64, 128}, pointers 16-byte
 * aligned, sm_80+ with >= 162 / 161 KB of shared memory per block (A100: 163, H100/H200: 227; not
 * sm_86/89); B*H <= 65535. The forward is step 05's, unchanged: `make diff A=05 B=06` shows the backward
 * being added and nothing else.
 *
 * Run:  build/attn run --step 06 --shape 4,8,4096,4096,128 --dtype bf16 --backward [--causal]
 *       make diff A=05 B=06
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "attention.h"
#include "mma_sm80.cuh"
#include "step.cuh"

typedef __nv_bfloat16 bf16;

/* The tiles: one config per head dim, or the sweep's override for both. With the cheaper base-2
 * softmax, D=64 is best at 128x128, 2 stages again (H200, N=4096: 345 TFLOP/s against 323 for step
 * 03's 128x64, 3 stages; bench/experiments/04_tile_variants/variants.txt): the longer key tile
 * amortises the per-tile softmax bookkeeping (row max and sum shuffles, rescale), now that the exps
 * are cheap. */
struct tiles {
    int Br, Bc, warps, stages;
};
#if defined(TILE_BR) && defined(TILE_BC) && defined(TILE_WARPS) && defined(TILE_STAGES)
constexpr tiles tiles_for(int D) { return (void)D, tiles{TILE_BR, TILE_BC, TILE_WARPS, TILE_STAGES}; }
#else
constexpr tiles tiles_for(int D) { return D == 64 ? tiles{128, 128, 4, 2} : tiles{128, 64, 4, 2}; }
#endif

/* Shared memory: Q [Br][D], then STAGES x (K [Bc][D], V [Bc][D]), all bf16. */
constexpr int smem_bytes(int D, tiles t) { return (t.Br * D + t.stages * 2 * t.Bc * D) * 2; }
constexpr int kSmemMax = 227 * 1024;   /* the opt-in limit per block on sm_90 */
constexpr bool tiles_ok(int D, tiles t)
{
    return t.warps >= 1 && t.Br % t.warps == 0 && (t.Br / t.warps) % 16 == 0 && t.Bc >= 16 &&
           t.Bc % 16 == 0 && t.stages >= 1 && smem_bytes(D, t) <= kSmemMax;
}

/* Byte offset of element (row, 8*chunk) in a [rows][D] bf16 tile: 16-byte chunks XOR row % 8,
 * so the 8 rows of one ldmatrix (same chunk, rows r..r+7) land on 8 different bank groups. */
template <int D> __device__ __forceinline__ uint32_t swz(int row, int chunk)
{
    return (uint32_t)(row * D * 2 + ((chunk ^ (row & 7)) << 4));
}

/* Byte offset within a row of 16-column step c (two 16-byte chunks, this lane's half) for a
 * lane whose (row % 8) ^ half is y: swz's chunk (2c + half) ^ (row % 8), as 2c ^ y. */
__device__ __forceinline__ uint32_t frag_chunk(int c, uint32_t y) { return ((2 * c) ^ y) << 4; }

/* ROWS x D tile, rows r0.. of the [N, D] matrix g, into swizzled smem at s; rows >= N are
 * zero-filled (an absent key must not bring garbage: 0 * NaN = NaN in P V). Thread x copies
 * chunk x % CH of rows x / CH + i * RP: with RP a multiple of 8 its swizzled chunk is the same
 * in every pass, so all passes share one smem and one global address plus constant offsets. */
template <int D, int ROWS, int THREADS>
__device__ __forceinline__ void load_tile(uint32_t s, const bf16 *g, int r0, int N)
{
    constexpr int CH = D / 8;             /* 16-byte chunks per row */
    constexpr int RP = THREADS / CH;      /* rows per pass */
    static_assert(THREADS % CH == 0, "a pass covers whole rows");
    const int r = threadIdx.x / CH, c = threadIdx.x % CH;
    const bf16 *src = g + (size_t)(r0 + r) * D + c * 8;
#pragma unroll
    for (int i = 0; i < (ROWS + RP - 1) / RP; i++) {
        if (ROWS % RP == 0 || r + i * RP < ROWS) {
            const bool in = r0 + r + i * RP < N;
            const uint32_t dst = RP % 8 == 0 ? s + swz<D>(r, c) + i * RP * D * 2
                                             : s + swz<D>(r + i * RP, c);
            cp_async_16(dst, in ? src + i * RP * D : g, in);
        }
    }
}

/* grid: (ceil(Nq / Br), B*H); block: WARPS * 32 threads. Q, K, V, O: [B, H, N, D]; lse: [B, H, Nq] */
template <int D, int Br, int Bc, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32)
attention_fwd(const bf16 *__restrict__ Q, const bf16 *__restrict__ K, const bf16 *__restrict__ V,
              bf16 *__restrict__ O, float *__restrict__ lse, int Nq, int Nk, float scale_log2,
              int causal)
{
    constexpr int THREADS = WARPS * 32;
    constexpr int RW = Br / WARPS;   /* query rows per warp */
    constexpr int MT = RW / 16;      /* 16-row mma slices per warp */
    constexpr int NT = Bc / 8;       /* 8-key column blocks of S */
    constexpr int DT = D / 8;        /* 8-feature column blocks of O */
    constexpr int KD = D / 16;       /* k-steps of Q K^T */
    constexpr int KB = Bc / 16;      /* k-steps of P V */
    /* Registers per thread: Q frags + O + S. Keep Q in registers only while that leaves room. */
    constexpr bool Q_IN_REGS = MT * KD * 4 + MT * DT * 4 + MT * NT * 4 <= 160;
    constexpr uint32_t TILE = Bc * D * 2;   /* bytes of one K or V tile */

    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t sQ = smem_u32(smem);
    const uint32_t sKV = sQ + Br * D * 2;   /* stage s: K at sKV + 2s*TILE, V at + TILE */

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const size_t bh = blockIdx.y;
    /* Causal: the heaviest query blocks (most keys) first. */
    const int q0 = (causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * Br;
    const int wr = warp * RW;   /* the warp's first row in the tile */
    Q += bh * Nq * D;
    K += bh * Nk * D;
    V += bh * Nk * D;
    /* Causal: no row of this block sees a key past q0 + Br - 1; stop at the tile holding it. */
    const int Tc = ((causal ? min(Nk, q0 + Br) : Nk) + Bc - 1) / Bc;

    /* Prologue: Q (one group), then key tiles 0 .. STAGES-2 (one group each, empty past Tc). */
    load_tile<D, Br, THREADS>(sQ, Q, q0, Nq);
    cp_async_commit();
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < Tc) {
            load_tile<D, Bc, THREADS>(sKV + 2 * st * TILE, K, st * Bc, Nk);
            load_tile<D, Bc, THREADS>(sKV + 2 * st * TILE + TILE, V, st * Bc, Nk);
        }
        cp_async_commit();
    }

    /* ldmatrix row addresses. Every fragment block starts at a row that is a multiple of 8, so
     * the lane's row % 8 is lane % 8, and the swizzled chunk of 16-column step c is
     * (2c + half) ^ (lane % 8) = 2c ^ y with the lane's y below (frag_chunk).
     *   A of Q (x4) and B of V (x4.trans): row L % 16, half L / 16  -> yA
     *   B of K (x4, two 8-key blocks):     row (L/16)*8 + L % 8, half (L/8) % 2  -> yB */
    const uint32_t yA = (lane / 16) ^ (lane % 8), yB = ((lane / 8) % 2) ^ (lane % 8);
    const uint32_t aQ = sQ + (uint32_t)(wr + lane % 16) * D * 2;
    uint32_t q[Q_IN_REGS ? MT : 1][Q_IN_REGS ? KD : 1][4];
    if constexpr (Q_IN_REGS) {
        cp_async_wait<STAGES - 1>();   /* the Q group is the oldest */
        __syncthreads();
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int kk = 0; kk < KD; kk++)
                ldmatrix_x4(q[mt][kk], aQ + mt * 16 * D * 2 + frag_chunk(kk, yA));
    }

    float o[MT][DT][4];
    float m_i[MT][2], l_i[MT][2];   /* rows g and g+8 of each slice; l_i is this lane's part */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int dn = 0; dn < DT; dn++)
            o[mt][dn][0] = o[mt][dn][1] = o[mt][dn][2] = o[mt][dn][3] = 0.f;
        m_i[mt][0] = m_i[mt][1] = -INFINITY;
        l_i[mt][0] = l_i[mt][1] = 0.f;
    }

    for (int j = 0; j < Tc; j++) {
        /* Tile j has landed and everyone is done with tile j-1, whose stage the prefetch of
         * tile j+STAGES-1 refills. One stage: load, wait, compute, one tile at a time. */
        if constexpr (STAGES == 1) {
            __syncthreads();
            load_tile<D, Bc, THREADS>(sKV, K, j * Bc, Nk);
            load_tile<D, Bc, THREADS>(sKV + TILE, V, j * Bc, Nk);
            cp_async_commit();
            cp_async_wait<0>();
            __syncthreads();
        } else {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            const int jn = j + STAGES - 1;
            if (jn < Tc) {
                const uint32_t sn = sKV + 2 * (jn % STAGES) * TILE;
                load_tile<D, Bc, THREADS>(sn, K, jn * Bc, Nk);
                load_tile<D, Bc, THREADS>(sn + TILE, V, jn * Bc, Nk);
            }
            cp_async_commit();
        }
        const uint32_t sK = sKV + 2 * (j % STAGES) * TILE, sV = sK + TILE;
        const uint32_t aK = sK + (uint32_t)((lane / 16) * 8 + lane % 8) * D * 2;
        const uint32_t aV = sV + (uint32_t)(lane % 16) * D * 2;
        const int k0 = j * Bc;

        /* S = Q K^T. K [Bc][D] row-major is the "col-major" B operand as it is: ldmatrix (no
         * trans) of keys n0 + (L/16)*8 + L%8, chunk (L/8)%2 gives B frags of key blocks 2np, 2np+1. */
        float s[MT][NT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int n = 0; n < NT; n++)
                s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < KD; kk++) {
            uint32_t qf[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                if constexpr (Q_IN_REGS) {
#pragma unroll
                    for (int r = 0; r < 4; r++)
                        qf[mt][r] = q[mt][kk][r];
                } else {
                    ldmatrix_x4(qf[mt], aQ + mt * 16 * D * 2 + frag_chunk(kk, yA));
                }
            }
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                uint32_t kf[4];
                ldmatrix_x4(kf, aK + np * 16 * D * 2 + frag_chunk(kk, yB));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma_bf16_16816(s[mt][2 * np], qf[mt], &kf[0]);
                    mma_bf16_16816(s[mt][2 * np + 1], qf[mt], &kf[2]);
                }
            }
        }

        /* Mask, only in the tiles that need it: keys past Nk (the last tile) and, if causal,
         * keys after the row (tiles whose last key is past q0, the block's first row). Element e
         * of s[mt][n] is row wr + 16mt + g + 8(e/2), key 8n + 2t + e%2 of the tile; the row
         * sees the tile's keys below lim, so one compare per score. */
        const bool masked = k0 + Bc > Nk || (causal && k0 + Bc - 1 > q0);
        if (masked)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = q0 + wr + mt * 16 + g + 8 * h;
                const int lim = (causal ? min(Nk, row + 1) : Nk) - k0 - 2 * t;
#pragma unroll
                for (int n = 0; n < NT; n++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        if (n * 8 + e >= lim)
                            s[mt][n][2 * h + e] = -INFINITY;
            }

        /* Online softmax per row. A row's scores live in the 4 lanes of a quad (same g). */
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float mx = -INFINITY;
#pragma unroll
                for (int n = 0; n < NT; n++)
                    mx = fmaxf(mx, fmaxf(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                /* m in log2 units: max(s) * c (c > 0, so the max commutes with the scale). */
                const float m_new = fmaxf(m_i[mt][h], mx * scale_log2);
                /* m_new is finite: key 0 is in tile 0 and every row sees it. The guard keeps
                 * -inf - -inf = NaN out all the same (FA2's Check_inf). */
                const float m_use = m_new == -INFINITY ? 0.f : m_new;
                const float alpha = ex2_approx(m_i[mt][h] - m_use);   /* 0 on the first tile */
                m_i[mt][h] = m_new;
                float rs = 0.f;
#pragma unroll
                for (int n = 0; n < NT; n++)
#pragma unroll
                    for (int e = 2 * h; e < 2 * h + 2; e++) {
                        s[mt][n][e] = ex2_approx(fmaf(s[mt][n][e], scale_log2, -m_use));
                        rs += s[mt][n][e];
                    }
                l_i[mt][h] = l_i[mt][h] * alpha + rs;
#pragma unroll
                for (int dn = 0; dn < DT; dn++) {
                    o[mt][dn][2 * h] *= alpha;
                    o[mt][dn][2 * h + 1] *= alpha;
                }
            }

        /* O += P V. P's A frag for keys 16kb..16kb+15 is S blocks 2kb and 2kb+1, packed to bf16.
         * V [Bc][D] is read transposed: ldmatrix.trans of keys 16kb + L%16, chunk 2dp + L/16
         * gives B frags of feature blocks 2dp, 2dp+1. */
#pragma unroll
        for (int kb = 0; kb < KB; kb++) {
            uint32_t pf[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                pf[mt][0] = pack_bf16(s[mt][2 * kb][0], s[mt][2 * kb][1]);
                pf[mt][1] = pack_bf16(s[mt][2 * kb][2], s[mt][2 * kb][3]);
                pf[mt][2] = pack_bf16(s[mt][2 * kb + 1][0], s[mt][2 * kb + 1][1]);
                pf[mt][3] = pack_bf16(s[mt][2 * kb + 1][2], s[mt][2 * kb + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < DT / 2; dp++) {
                uint32_t vf[4];
                ldmatrix_x4_trans(vf, aV + kb * 16 * D * 2 + frag_chunk(dp, yA));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma_bf16_16816(o[mt][2 * dp], pf[mt], &vf[0]);
                    mma_bf16_16816(o[mt][2 * dp + 1], pf[mt], &vf[2]);
                }
            }
        }
    }
    cp_async_wait<0>();   /* only empty groups can be left; nothing may be in flight at exit */

    /* Epilogue: O = acc / l in bf16, staged through the warp's own rows of the Q tile (only
     * this warp read them) so that each lane stores whole 16-byte chunks of a row. */
    __syncwarp();
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float l = l_i[mt][h];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = l > 0.f ? 1.f / l : 0.f;
            const int r = wr + mt * 16 + g + 8 * h;
#pragma unroll
            for (int dn = 0; dn < DT; dn++)
                *reinterpret_cast<uint32_t *>(smem + swz<D>(r, dn) + 4 * t) =
                    pack_bf16(o[mt][dn][2 * h] * inv, o[mt][dn][2 * h + 1] * inv);
            if (t == 0 && q0 + r < Nq)
                lse[bh * Nq + q0 + r] = (m_i[mt][h] + log2f(l)) * 0.693147180559945309f;
        }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < RW * DT / 32; i++) {   /* RW * DT = 16 MT * D / 8: a multiple of 32 */
        const int r = wr + (lane + 32 * i) / DT, c = (lane + 32 * i) % DT;
        if (q0 + r < Nq)
            *reinterpret_cast<uint4 *>(O + (bh * Nq + q0 + r) * D + c * 8) =
                *reinterpret_cast<const uint4 *>(smem + swz<D>(r, c));
    }
}

/* ---- the backward (the one idea of step 06) ---- */

constexpr int bwd_Bc = 128;        /* keys per block: 4 warps x 32 in S, dP, dK, dV */
constexpr int bwd_threads = 256;
constexpr float bwd_log2e = 1.4426950408889634f;

/* Element offset of (row, col) in a shared tile of rows of W bf16, col a multiple of 8 plus 0..7:
 * the 16-byte chunk col / 8 is XORed with row & 7. Every ldmatrix matrix reads one chunk of 8
 * consecutive rows: 8 different physical chunks, all 32 banks, no conflict. */
template <int W> __host__ __device__ __forceinline__ int bwd_swz(int row, int col)
{
    return row * W + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

/* The lane's row and column inside a 16 x 16 block for ldmatrix_x4, in the two orders the
 * products need (lane L gives the address of row L % 8 of matrix L / 8):
 *   "rows first": matrices (r 0-7, c 0-7), (r 8-15, c 0-7), (r 0-7, c 8-15), (r 8-15, c 8-15).
 *     Plain: the A fragment of a row-major 16 x 16 (a0..a3). Trans: the B fragments of two n8
 *     tiles, columns 0-7 then 8-15, of a [k][n] row-major block (b0, b1 of n-tile 0, then 1).
 *   "cols first": (r 0-7, c 0-7), (r 0-7, c 8-15), (r 8-15, c 0-7), (r 8-15, c 8-15).
 *     Plain: the B fragments of two n8 tiles, rows 0-7 then 8-15, of an [n][k] row-major block.
 *     Trans: the A fragment of a 16 x 16 whose transpose is stored row-major ([k][m]). */
__host__ __device__ __forceinline__ int bwd_lrow_rf(int lane) { return lane & 15; }
__host__ __device__ __forceinline__ int bwd_lcol_rf(int lane) { return (lane >> 4) << 3; }
__host__ __device__ __forceinline__ int bwd_lrow_cf(int lane) { return ((lane >> 4) << 3) + (lane & 7); }
__host__ __device__ __forceinline__ int bwd_lcol_cf(int lane) { return ((lane >> 3) & 1) << 3; }

/* The byte address of the lane's row for the 16 x 16 block at (R, C) of a swizzled tile of row
 * width W at byte address base, R and C multiples of 16 (compile-time after unrolling), given the
 * lane's offset for block (0, 0), lane_off = 2 * bwd_swz<W>(lrow, lcol). Since C / 8 is even and
 * lcol / 8 is 0 or 1, the chunk index (C + lcol) / 8 ^ (row & 7) is (lcol / 8 ^ (row & 7)) ^ C / 8:
 *     2 * bwd_swz<W>(R + lrow, C + lcol) = 2 * R * W + (lane_off ^ 2 * C)
 * one XOR per column block (a handful of registers for the whole kernel) and an immediate for the
 * row block, instead of a full address per ldmatrix. */
template <int W>
__host__ __device__ __forceinline__ uint32_t bwd_at(uint32_t base, int R, int C, uint32_t lane_off)
{
    return base + 2 * R * W + (lane_off ^ (2 * C));
}

__device__ __forceinline__ float bwd_lo(uint32_t x) { return __uint_as_float(x << 16); }
__device__ __forceinline__ float bwd_hi(uint32_t x) { return __uint_as_float(x & 0xffff0000u); }

__device__ __forceinline__ void bwd_atomic_add2(float *p, float x, float y)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float2 *>(p), make_float2(x, y));   /* one 8-byte red on sm_90 */
#else
    atomicAdd(p, x);
    atomicAdd(p + 1, y);
#endif
}

/* Pre-pass, one warp per query row: Di = dO . O (fp32), and the row of the dQ accumulator = 0.
 * dO, O: [B*H*Nq, D]; Di: [B*H*Nq]; dq_acc: [B*H*Nq, D] fp32. */
__global__ void __launch_bounds__(bwd_threads)
bwd_preprocess(const __nv_bfloat16 *__restrict__ dO, const __nv_bfloat16 *__restrict__ O,
               float *__restrict__ Di, float *__restrict__ dq_acc, size_t rows, int D)
{
    const size_t row = (size_t)blockIdx.x * (bwd_threads / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows)
        return;
    float acc = 0.f;
    for (int e = 2 * lane; e < D; e += 64) {
        const float2 a = __bfloat1622float2(*(const __nv_bfloat162 *)(dO + row * D + e));
        const float2 b = __bfloat1622float2(*(const __nv_bfloat162 *)(O + row * D + e));
        acc += a.x * b.x + a.y * b.y;
        *(float2 *)(dq_acc + row * D + e) = make_float2(0.f, 0.f);
    }
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0)
        Di[row] = acc;
}

/* rows x kD bf16 from global (rows r0.. of a [n][kD] matrix) into a swizzled shared tile;
 * rows >= n are zero-filled (cp.async src-size 0) and not read. */
template <int kD, int kRows>
__device__ __forceinline__ void bwd_load_tile(__nv_bfloat16 *s, const __nv_bfloat16 *g, int r0,
                                              int n)
{
    constexpr int CH = kD / 8;   /* 16-byte chunks per row */
    static_assert(kRows * CH % bwd_threads == 0, "tile must split evenly over the block");
#pragma unroll
    for (int x = threadIdx.x; x < kRows * CH; x += bwd_threads) {
        const int r = x / CH, c = x % CH;
        const bool in = r0 + r < n;
        cp_async_16(smem_u32(s + bwd_swz<kD>(r, c * 8)), g + (size_t)(in ? r0 + r : 0) * kD + c * 8,
                    in);
    }
}

/* lse and Di of query rows q0 .. q0+Br-1 (fp32) into shared memory, zero past Nq; the first Br
 * threads copy lse, the next Br copy Di. */
template <int kBr>
__device__ __forceinline__ void bwd_load_rows(float *sl, float *sdi, const float *lse,
                                              const float *Di, int q0, int Nq)
{
    static_assert(2 * kBr <= bwd_threads, "one thread per value");
    const int r = threadIdx.x % kBr, q = q0 + r;
    const bool in = q < Nq;
    if (threadIdx.x < kBr)
        cp_async_4(smem_u32(sl + r), lse + (in ? q : 0), in);
    else if (threadIdx.x < 2 * kBr)
        cp_async_4(smem_u32(sdi + r), Di + (in ? q : 0), in);
}

template <int kD, int kBr> constexpr int bwd_smem_bytes()
{
    /* sK, sV [Bc][D]; sQ, sdO [2][Br][D]; sP, sdS [Br][Bc] (bf16); sL, sDi [2][Br] (fp32) */
    return (2 * bwd_Bc * kD + 4 * kBr * kD + 2 * kBr * bwd_Bc) * 2 + 4 * kBr * 4;
}

/* grid: (ceil(Nk / Bc), B*H); block: 256 threads (8 warps); dynamic shared: bwd_smem_bytes.
 * Q, dO: [B, H, Nq, D]; K, V, dK, dV: [B, H, Nk, D] bf16; lse, Di: [B, H, Nq] fp32;
 * dq_acc: [B, H, Nq, D] fp32, zeroed, receives dS K (unscaled).
 *
 * Warp layouts (FA2's Flash_bwd_kernel_traits for sm80: D = 128 <Br 64, Bc 128, AtomLayoutMSdP 2,
 * AtomLayoutNdKV 4, AtomLayoutMdQ 2>, D = 64 <128, 128, 2, 4, 4>), queries as rows. Each product
 * is split over the 8 warps its own way, and a warp reads only its sub-tile's rows of A and
 * columns of B:
 *   S = Q K^T, dP = dO V^T  [Br x Bc]: warps 2 (queries) x 4 (keys), Br/2 x 32 each.
 *                           A = Q, dO (plain, rows first); B = K, V [n=key][k] (plain, cols first).
 *                           P and dS, bf16, to sP and sdS [Br][Bc].
 *   dV += P^T dO, dK += dS^T Q  [Bc x D]: warps 4 (keys) x 2 (features), 32 x D/2 each, the
 *                           accumulators that live across the loop. A = P^T, dS^T: sP, sdS are
 *                           [k=query][m=key] (.trans, cols first); B = dO, Q [k=query][n]
 *                           (.trans, rows first).
 *   dQ += dS K  [Br x D]:   warps Br/32 (queries) x 256/Br (features), 32 x 32 each. A = dS
 *                           [m=query][k=key] (plain, rows first); B = K [k=key][n] (.trans,
 *                           rows first); fp32 atomics into dq_acc.
 * Two barriers per query tile: the first (the tile has landed, tile m-1 is done: its Q, dO
 * buffer may be refilled, sP and sdS rewritten), the second after sP and sdS are written. */
template <int kD, int kBr>
__global__ void __launch_bounds__(bwd_threads, 1)
bwd_main(const __nv_bfloat16 *__restrict__ Q, const __nv_bfloat16 *__restrict__ K,
         const __nv_bfloat16 *__restrict__ V, const __nv_bfloat16 *__restrict__ dO,
         const float *__restrict__ lse, const float *__restrict__ Di, float *__restrict__ dq_acc,
         __nv_bfloat16 *__restrict__ dK, __nv_bfloat16 *__restrict__ dV, int Nq, int Nk,
         float scale, int causal)
{
    constexpr int Bc = bwd_Bc;
    constexpr int SQ = kBr / 2;     /* S, dP: queries per warp ... */
    constexpr int SK = Bc / 4;      /* ... and keys per warp */
    constexpr int SM16 = SQ / 16;   /* m16 tiles of S per warp */
    constexpr int SN8 = SK / 8;     /* n8 tiles of S per warp */
    constexpr int KW = Bc / 4;      /* dK, dV: keys per warp (2 m16 tiles) ... */
    constexpr int FW = kD / 2;      /* ... and features per warp */
    constexpr int ND8 = FW / 8;     /* n8 tiles of dK, dV per warp */
    constexpr int WM = kBr / 32;    /* dQ: warps along query rows ... */
    constexpr int WN = 8 / WM;      /* ... and along features */
    constexpr int DW = kD / WN;     /* features per warp in dQ */
    static_assert(SQ % 16 == 0 && KW == 32 && FW % 16 == 0, "S, dK, dV warp tiles");
    static_assert(WM * WN == 8 && DW == 32, "dQ warp grid must cover Br x D, 32 x 32 per warp");

    extern __shared__ __align__(128) unsigned char bwd_smem[];
    __nv_bfloat16 *sK = (__nv_bfloat16 *)bwd_smem;   /* [Bc][D]        */
    __nv_bfloat16 *sV = sK + Bc * kD;                 /* [Bc][D]        */
    __nv_bfloat16 *sQ = sV + Bc * kD;                 /* [2][Br][D]     */
    __nv_bfloat16 *sdO = sQ + 2 * kBr * kD;           /* [2][Br][D]     */
    __nv_bfloat16 *sP = sdO + 2 * kBr * kD;           /* [Br][Bc]       */
    __nv_bfloat16 *sdS = sP + kBr * Bc;               /* [Br][Bc]       */
    float *sL = (float *)(sdS + kBr * Bc);            /* [2][Br]: lse, 0 past Nq */
    float *sDi = sL + 2 * kBr;                        /* [2][Br]: Di, 0 past Nq */

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane >> 2, t = lane & 3;            /* fragment row group, thread in group */
    const int sq = (warp / 4) * SQ, sk = (warp % 4) * SK;   /* S, dP: the warp's queries, keys */
    const int kw = (warp % 4) * KW, fw = (warp / 4) * FW;   /* dK, dV: its keys, features */
    const int wm = warp % WM, wn = warp / WM;               /* dQ: its 32 rows, 32 features */
    /* the lane's ldmatrix offsets (bytes) in block (0, 0) of a tile: see bwd_at */
    const uint32_t lo_rfD = 2 * bwd_swz<kD>(bwd_lrow_rf(lane), bwd_lcol_rf(lane));
    const uint32_t lo_cfD = 2 * bwd_swz<kD>(bwd_lrow_cf(lane), bwd_lcol_cf(lane));
    const uint32_t lo_rfC = 2 * bwd_swz<Bc>(bwd_lrow_rf(lane), bwd_lcol_rf(lane));
    const uint32_t lo_cfC = 2 * bwd_swz<Bc>(bwd_lrow_cf(lane), bwd_lcol_cf(lane));
    /* ... with the warp's column offset Cw folded in, where it has one: Cw is a multiple of 2^n
     * and the unrolled offsets C are below 2^n (kw, 32wn: 2^n = 32, C <= 16; fw: 2^n = D/2,
     * C <= D/2 - 16), so their bits are disjoint and lo ^ 2 (Cw + C) = (lo ^ 2 Cw) ^ 2 C. This,
     * and st_C below, keep the loop-invariant addresses few: D = 128 has no register to spare. */
    const uint32_t lo_cfC_kw = lo_cfC ^ (2 * kw), lo_rfD_fw = lo_rfD ^ (2 * fw);
    const uint32_t lo_rfD_wn = lo_rfD ^ (2 * wn * DW);
    /* The lane's C fragment element (g, sk + 2t) in sP, sdS. Rows sq + 16i + 8h + g keep
     * row & 7 = g, and n8 tile j moves the chunk sk / 8 (a multiple of 4) by j < 4: element
     * offset (sq + 16i + 8h) * Bc + (st_C ^ 8j). */
    const int st_C = bwd_swz<Bc>(g, sk + 2 * t);
    const size_t bh = blockIdx.y;
    const int k0 = blockIdx.x * Bc;
    Q += bh * Nq * kD;
    dO += bh * Nq * kD;
    dq_acc += bh * Nq * kD;
    lse += bh * Nq;
    Di += bh * Nq;
    K += bh * Nk * kD;
    V += bh * Nk * kD;
    dK += bh * Nk * kD;
    dV += bh * Nk * kD;
    const float scale_log2 = scale * bwd_log2e;

    const int m_end = (Nq + kBr - 1) / kBr;
    /* causal (top-left): row i sees key j iff j <= i, so rows < k0 see none of these keys */
    const int m_begin = causal ? k0 / kBr : 0;

    bwd_load_tile<kD, Bc>(sK, K, k0, Nk);
    bwd_load_tile<kD, Bc>(sV, V, k0, Nk);
    if (m_begin < m_end) {
        bwd_load_tile<kD, kBr>(sQ, Q, m_begin * kBr, Nq);
        bwd_load_tile<kD, kBr>(sdO, dO, m_begin * kBr, Nq);
        bwd_load_rows<kBr>(sL, sDi, lse, Di, m_begin * kBr, Nq);
    }
    cp_async_commit();

    /* dK, dV of keys kw + 16i + (g, g+8), features fw + 8j + (2t, 2t+1): C fragments [i][j] */
    float accK[2][ND8][4], accV[2][ND8][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < ND8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                accK[i][j][e] = accV[i][j][e] = 0.f;

    for (int m = m_begin; m < m_end; m++) {
        const int buf = (m - m_begin) & 1;
        const int q0 = m * kBr;
        cp_async_wait<0>();   /* this tile's Q, dO, lse, Di (the first time K, V) have landed */
        __syncthreads();      /* ... for every thread; and everyone is done with tile m-1 */

        /* Prefetch tile m+1 into the other buffers, last read in iteration m-1. */
        if (m + 1 < m_end) {
            bwd_load_tile<kD, kBr>(sQ + (buf ^ 1) * kBr * kD, Q, q0 + kBr, Nq);
            bwd_load_tile<kD, kBr>(sdO + (buf ^ 1) * kBr * kD, dO, q0 + kBr, Nq);
            bwd_load_rows<kBr>(sL + (buf ^ 1) * kBr, sDi + (buf ^ 1) * kBr, lse, Di, q0 + kBr, Nq);
        }
        cp_async_commit();

        const __nv_bfloat16 *q_s = sQ + buf * kBr * kD;
        const __nv_bfloat16 *do_s = sdO + buf * kBr * kD;
        const float *l_s = sL + buf * kBr;
        const float *di_s = sDi + buf * kBr;

        /* S = Q K^T: [SQ queries x 32 keys] per warp; C fragment [i][j] = queries sq + 16i
         * (+ g, g+8), keys sk + 8j (+ 2t, 2t+1). A = Q (plain, rows first); B = K (plain, cols
         * first: K is [n][k]). */
        float s[SM16][SN8][4];
#pragma unroll
        for (int i = 0; i < SM16; i++)
#pragma unroll
            for (int j = 0; j < SN8; j++)
                s[i][j][0] = s[i][j][1] = s[i][j][2] = s[i][j][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < kD / 16; kk++) {
            uint32_t a[SM16][4];
#pragma unroll
            for (int i = 0; i < SM16; i++)
                ldmatrix_x4(a[i], bwd_at<kD>(smem_u32(q_s), sq + 16 * i, kk * 16, lo_rfD));
#pragma unroll
            for (int jk = 0; jk < SK / 16; jk++) {
                uint32_t b[4];
                ldmatrix_x4(b, bwd_at<kD>(smem_u32(sK), sk + 16 * jk, kk * 16, lo_cfD));
#pragma unroll
                for (int i = 0; i < SM16; i++) {
                    mma_bf16_16816(s[i][2 * jk], a[i], b);
                    mma_bf16_16816(s[i][2 * jk + 1], a[i], b + 2);
                }
            }
        }

        /* P = exp2(S scale log2e - lse log2e), masked, packed to bf16 and stored to sP. The
         * thread holds rows sq + 16i + g + 8h (h = e / 2), each with one lse. Only tiles that
         * reach past Nk or Nq, or cross the causal diagonal, pay for the mask. */
        const bool need_mask = k0 + Bc > Nk || q0 + kBr > Nq || (causal && q0 < k0 + Bc - 1);
        uint32_t pb[SM16][SN8][2];   /* [i][j][h]: P of row ... + 8h, keys ... + 2t, 2t+1 */
#pragma unroll
        for (int i = 0; i < SM16; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r8 = sq + 16 * i + 8 * h, r = r8 + g, q = q0 + r;
                const float l2 = l_s[r] * bwd_log2e;
#pragma unroll
                for (int j = 0; j < SN8; j++) {
#pragma unroll
                    for (int e = 2 * h; e < 2 * h + 2; e++) {
                        float x = ex2_approx(fmaf(s[i][j][e], scale_log2, -l2));
                        if (need_mask) {
                            const int key = k0 + sk + 8 * j + 2 * t + (e & 1);
                            /* padded key (K row zero-filled: S = 0, P would be exp(-lse)), padded
                             * query row (Q zero, lse zero-filled: P would be 1), or causally
                             * hidden */
                            if (key >= Nk || q >= Nq || (causal && key > q))
                                x = 0.f;
                        }
                        s[i][j][e] = x;
                    }
                    pb[i][j][h] = pack_bf16(s[i][j][2 * h], s[i][j][2 * h + 1]);
                    *(uint32_t *)(sP + r8 * Bc + (st_C ^ 8 * j)) = pb[i][j][h];
                }
            }

        /* dP = dO V^T: as S with dO for Q and V for K. Reuses s[][] (P lives on in pb). */
#pragma unroll
        for (int i = 0; i < SM16; i++)
#pragma unroll
            for (int j = 0; j < SN8; j++)
                s[i][j][0] = s[i][j][1] = s[i][j][2] = s[i][j][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < kD / 16; kk++) {
            uint32_t a[SM16][4];
#pragma unroll
            for (int i = 0; i < SM16; i++)
                ldmatrix_x4(a[i], bwd_at<kD>(smem_u32(do_s), sq + 16 * i, kk * 16, lo_rfD));
#pragma unroll
            for (int jk = 0; jk < SK / 16; jk++) {
                uint32_t b[4];
                ldmatrix_x4(b, bwd_at<kD>(smem_u32(sV), sk + 16 * jk, kk * 16, lo_cfD));
#pragma unroll
                for (int i = 0; i < SM16; i++) {
                    mma_bf16_16816(s[i][2 * jk], a[i], b);
                    mma_bf16_16816(s[i][2 * jk + 1], a[i], b + 2);
                }
            }
        }

        /* dS = P o (dP - Di[query]), from the bf16 P the products used (as the reference
         * rounds it), to sdS. Zero wherever P is: padded keys (and dP = 0 there: V rows are
         * zero-filled), query rows past Nq (P = 0, dO rows zero, Di = 0). */
#pragma unroll
        for (int i = 0; i < SM16; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r8 = sq + 16 * i + 8 * h;
                const float di = di_s[r8 + g];
#pragma unroll
                for (int j = 0; j < SN8; j++) {
                    const uint32_t p = pb[i][j][h];
                    *(uint32_t *)(sdS + r8 * Bc + (st_C ^ 8 * j)) =
                        pack_bf16(bwd_lo(p) * (s[i][j][2 * h] - di),
                                  bwd_hi(p) * (s[i][j][2 * h + 1] - di));
                }
            }

        __syncthreads();   /* sP and sdS are complete */

        /* dV += P^T dO: [32 keys x D/2] per warp. A = P^T, keys kw + 16i, queries 16kk: sP is
         * [k=query][m=key] (.trans, cols first); B = dO [k=query][n=feature] (.trans, rows
         * first). */
#pragma unroll
        for (int kk = 0; kk < kBr / 16; kk++) {
            uint32_t a[2][4];
#pragma unroll
            for (int i = 0; i < 2; i++)
                ldmatrix_x4_trans(a[i], bwd_at<Bc>(smem_u32(sP), kk * 16, 16 * i, lo_cfC_kw));
#pragma unroll
            for (int jd = 0; jd < FW / 16; jd++) {
                uint32_t b[4];
                ldmatrix_x4_trans(b, bwd_at<kD>(smem_u32(do_s), kk * 16, 16 * jd, lo_rfD_fw));
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    mma_bf16_16816(accV[i][2 * jd], a[i], b);
                    mma_bf16_16816(accV[i][2 * jd + 1], a[i], b + 2);
                }
            }
        }

        /* dK += dS^T Q: as dV with sdS for sP and Q for dO. */
#pragma unroll
        for (int kk = 0; kk < kBr / 16; kk++) {
            uint32_t a[2][4];
#pragma unroll
            for (int i = 0; i < 2; i++)
                ldmatrix_x4_trans(a[i], bwd_at<Bc>(smem_u32(sdS), kk * 16, 16 * i, lo_cfC_kw));
#pragma unroll
            for (int jd = 0; jd < FW / 16; jd++) {
                uint32_t b[4];
                ldmatrix_x4_trans(b, bwd_at<kD>(smem_u32(q_s), kk * 16, 16 * jd, lo_rfD_fw));
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    mma_bf16_16816(accK[i][2 * jd], a[i], b);
                    mma_bf16_16816(accK[i][2 * jd + 1], a[i], b + 2);
                }
            }
        }

        /* dQ (+)= dS K: warp (wm, wn) owns query rows 32wm.. and features 32wn... A = dS
         * [m=query][k=key] (plain, rows first); B = K [k=key][n=feature] (.trans, rows first).
         * Causal: 32 rows entirely above the tile's first key have dS = 0 and are skipped. */
        const int r0 = q0 + wm * 32;
        if (!(causal && r0 + 31 < k0) && r0 < Nq) {
            float dq[2][DW / 8][4];
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < DW / 8; j++)
                    dq[i][j][0] = dq[i][j][1] = dq[i][j][2] = dq[i][j][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < Bc / 16; kk++) {
                uint32_t a[2][4];
#pragma unroll
                for (int i = 0; i < 2; i++)
                    ldmatrix_x4(a[i], bwd_at<Bc>(smem_u32(sdS), wm * 32 + 16 * i, kk * 16, lo_rfC));
#pragma unroll
                for (int jd = 0; jd < DW / 16; jd++) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, bwd_at<kD>(smem_u32(sK), kk * 16, jd * 16, lo_rfD_wn));
#pragma unroll
                    for (int i = 0; i < 2; i++) {
                        mma_bf16_16816(dq[i][2 * jd], a[i], b);
                        mma_bf16_16816(dq[i][2 * jd + 1], a[i], b + 2);
                    }
                }
            }
            /* C fragment [i][j]: rows r0+16i+g (c0, c1) and +8 (c2, c3), features wn*DW + 8j + 2t.. */
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < DW / 8; j++) {
                    const int r = r0 + 16 * i + g, d = wn * DW + 8 * j + 2 * t;
                    if (r < Nq)
                        bwd_atomic_add2(dq_acc + (size_t)r * kD + d, dq[i][j][0], dq[i][j][1]);
                    if (r + 8 < Nq)
                        bwd_atomic_add2(dq_acc + (size_t)(r + 8) * kD + d, dq[i][j][2], dq[i][j][3]);
                }
        }
    }

    /* Epilogue: dK (times scale) and dV to bf16, staged through sK and sV (swizzled) so the
     * global stores are 16 bytes per thread and coalesced. */
    cp_async_wait<0>();   /* with no query tile at all, K and V may still be landing */
    __syncthreads();      /* every warp is done reading sK, sV */
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < ND8; j++) {
            const int r = kw + 16 * i + g, c = fw + 8 * j + 2 * t;
            *(uint32_t *)(sK + bwd_swz<kD>(r, c)) =
                pack_bf16(accK[i][j][0] * scale, accK[i][j][1] * scale);
            *(uint32_t *)(sK + bwd_swz<kD>(r + 8, c)) =
                pack_bf16(accK[i][j][2] * scale, accK[i][j][3] * scale);
            *(uint32_t *)(sV + bwd_swz<kD>(r, c)) = pack_bf16(accV[i][j][0], accV[i][j][1]);
            *(uint32_t *)(sV + bwd_swz<kD>(r + 8, c)) = pack_bf16(accV[i][j][2], accV[i][j][3]);
        }
    __syncthreads();
    constexpr int CH = kD / 8;
#pragma unroll
    for (int x = tid; x < Bc * CH; x += bwd_threads) {
        const int r = x / CH, c = x % CH;
        if (k0 + r < Nk) {
            *(uint4 *)(dK + (size_t)(k0 + r) * kD + c * 8) = *(const uint4 *)(sK + bwd_swz<kD>(r, c * 8));
            *(uint4 *)(dV + (size_t)(k0 + r) * kD + c * 8) = *(const uint4 *)(sV + bwd_swz<kD>(r, c * 8));
        }
    }
}

/* dQ = scale * accumulator, to bf16; 4 elements per thread (D is a multiple of 4). */
__global__ void __launch_bounds__(bwd_threads)
bwd_convert_dq(const float *__restrict__ acc, __nv_bfloat16 *__restrict__ dq, size_t n4,
               float scale)
{
    for (size_t i = (size_t)blockIdx.x * bwd_threads + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * bwd_threads) {
        const float4 v = ((const float4 *)acc)[i];
        ((uint2 *)dq)[i] = make_uint2(pack_bf16(v.x * scale, v.y * scale),
                                      pack_bf16(v.z * scale, v.w * scale));
    }
}

/* ------------------------------------------------------------------------ launch wrapper */

/* Why the tile config for head dim D cannot work, or NULL. Built once (the config is fixed at
 * compile time), so the pointer stays valid. */
template <int D> static const char *tiles_why()
{
    static char buf[160];
    static const char *why = [] () -> const char * {
        constexpr tiles t = tiles_for(D);
        if (tiles_ok(D, t))
            return NULL;
        if (t.warps < 1 || t.Br % t.warps || (t.Br / t.warps) % 16)
            snprintf(buf, sizeof buf, "tile config Br=%d warps=%d: %g rows per warp, need a "
                     "multiple of 16", t.Br, t.warps, t.warps >= 1 ? (double)t.Br / t.warps : 0.);
        else if (t.Bc < 16 || t.Bc % 16)
            snprintf(buf, sizeof buf, "tile config Bc=%d: need a multiple of 16", t.Bc);
        else if (t.stages < 1)
            snprintf(buf, sizeof buf, "tile config stages=%d: need at least 1", t.stages);
        else
            snprintf(buf, sizeof buf, "tile config Br=%d Bc=%d stages=%d at D=%d: %d bytes of "
                     "shared memory, above %d", t.Br, t.Bc, t.stages, D, smem_bytes(D, t),
                     kSmemMax);
        return buf;
    }();
    return why;
}

static attn_status supports(const attn_problem *p, int backward, const char **why)
{
    attn_status s = attn_problem_valid(p, why);
    if (s != ATTN_OK)
        return s;
    if (backward) {
        if (p->deterministic) {
            *why = "no deterministic backward: dQ is added by fp32 atomics, in whatever order the "
                   "blocks run (dK and dV are repeatable)";
            return ATTN_ERR_UNSUPPORTED;
        }
        if (p->dtype != ATTN_BF16) {
            *why = "the backward takes bf16 only (mma.sync bf16 tensor-core products)";
            return ATTN_ERR_UNSUPPORTED;
        }
        if (p->head_dim != 64 && p->head_dim != 128) {
            *why = "the backward takes head_dim 64 or 128 only (tiles are compiled per D)";
            return ATTN_ERR_UNSUPPORTED;
        }
        if ((size_t)p->batch * p->heads > 65535) {
            *why = "B*H above 65535 (the grid's y dimension)";
            return ATTN_ERR_UNSUPPORTED;
        }
        if ((size_t)p->batch * p->heads * p->seq_q > (size_t)0x7fffffff * (bwd_threads / 32)) {
            *why = "B*H*Nq too large for the pre-pass grid";
            return ATTN_ERR_UNSUPPORTED;
        }
        *why = NULL;
        return ATTN_OK;
    }
    if (p->dtype != ATTN_BF16) {
        *why = "tensor-core step: bf16 only; steps 00-02 take fp32";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (p->head_dim != 64 && p->head_dim != 128) {
        *why = "head_dim must be 64 or 128 (the tiles and fragments are sized per D)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if ((size_t)p->batch * p->heads > 65535) {
        *why = "B*H above 65535 (the grid's y dimension)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (!(p->scale > 0.f)) {
        *why = "scale <= 0: the row max is taken before the scale is applied (exp2 fold)";
        return ATTN_ERR_UNSUPPORTED;
    }
    const char *w = p->head_dim == 64 ? tiles_why<64>() : tiles_why<128>();
    if (w) {
        *why = w;
        return ATTN_ERR_UNSUPPORTED;
    }
    *why = NULL;
    return ATTN_OK;
}

static size_t bwd_align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* The backward's workspace: the fp32 dQ accumulator [B, H, Nq, D], then Di [B, H, Nq]. */
static size_t workspace_bytes(const attn_problem *p, int backward)
{
    if (!backward)
        return 0;
    const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
    return bwd_align256(rows * p->head_dim * 4) + bwd_align256(rows * 4);
}

template <int D, int Br, int Bc, int WARPS, int STAGES>
static attn_status launch(const attn_problem *p, const void *q, const void *k, const void *v,
                          void *o, float *lse, cudaStream_t stream)
{
    if constexpr (!tiles_ok(D, tiles{Br, Bc, WARPS, STAGES})) {
        (void)p, (void)q, (void)k, (void)v, (void)o, (void)lse, (void)stream;
        return ATTN_ERR_UNSUPPORTED;   /* supports() said why; never compiled */
    } else {
        constexpr int smem = smem_bytes(D, tiles{Br, Bc, WARPS, STAGES});
        auto kernel = attention_fwd<D, Br, Bc, WARPS, STAGES>;
        int dev, optin;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
                cudaSuccess)
            return ATTN_ERR_CUDA;
        if (smem > optin)
            return ATTN_ERR_UNSUPPORTED;   /* an sm_8x part with less shared memory */
        if (smem > 48 * 1024 &&
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
                cudaSuccess)
            return ATTN_ERR_CUDA;
        dim3 grid((p->seq_q + Br - 1) / Br, p->batch * p->heads);
        kernel<<<grid, WARPS * 32, smem, stream>>>((const bf16 *)q, (const bf16 *)k,
                                                   (const bf16 *)v, (bf16 *)o, lse, p->seq_q,
                                                   p->seq_k, p->scale * 1.44269504088896341f,
                                                   p->causal);
        return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
    }
}

template <int D>
static attn_status dispatch(const attn_problem *p, const void *q, const void *k, const void *v,
                            void *o, float *lse, cudaStream_t stream)
{
    constexpr tiles t = tiles_for(D);
    return launch<D, t.Br, t.Bc, t.warps, t.stages>(p, q, k, v, o, lse, stream);
}

static attn_status forward(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream)
{
    attn_status s = step_check_forward(supports, workspace_bytes, p, q, k, v, o, lse, workspace);
    if (s != ATTN_OK)
        return s;
    if (step_device_cc() < 80)
        return ATTN_ERR_UNSUPPORTED;
    if (p->head_dim == 64)
        return dispatch<64>(p, q, k, v, o, lse, stream);
    return dispatch<128>(p, q, k, v, o, lse, stream);
}

/* Before anything is launched: the main kernel's shared memory fits this device. */
template <int kD, int kBr> static attn_status bwd_prepare()
{
    constexpr int smem = bwd_smem_bytes<kD, kBr>();
    /* Opt in to > 48 KB of dynamic shared memory, once per device (a few microseconds of host
     * time that would otherwise sit between the pre-pass and this kernel on every call). */
    static unsigned long long opted_in;   /* bit per device */
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess)
        return ATTN_ERR_CUDA;
    if (dev >= 64 || !(opted_in >> dev & 1)) {
        if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess)
            return ATTN_ERR_CUDA;
        if (optin < smem)   /* sm_86/89 (99 KB): the tiles do not fit */
            return ATTN_ERR_UNSUPPORTED;
        if (cudaFuncSetAttribute(bwd_main<kD, kBr>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 smem) != cudaSuccess)
            return ATTN_ERR_CUDA;
        if (dev < 64)
            opted_in |= 1ull << dev;
    }
    return ATTN_OK;
}

template <int kD, int kBr>
static void bwd_launch(const attn_problem *p, const void *q, const void *k, const void *v,
                       const void *d_o, const float *lse, float *Di, float *dq_acc, void *dk,
                       void *dv, cudaStream_t stream)
{
    constexpr int smem = bwd_smem_bytes<kD, kBr>();
    const dim3 grid((p->seq_k + bwd_Bc - 1) / bwd_Bc, p->batch * p->heads);
    bwd_main<kD, kBr><<<grid, bwd_threads, smem, stream>>>(
        (const __nv_bfloat16 *)q, (const __nv_bfloat16 *)k, (const __nv_bfloat16 *)v,
        (const __nv_bfloat16 *)d_o, lse, Di, dq_acc, (__nv_bfloat16 *)dk, (__nv_bfloat16 *)dv,
        p->seq_q, p->seq_k, p->scale, p->causal);
}

static attn_status backward(const attn_problem *p, const void *q, const void *k, const void *v,
                            const void *o, const float *lse, const void *d_o, void *dq, void *dk,
                            void *dv, void *workspace, cudaStream_t stream)
{
    attn_status s = step_check_backward(supports, workspace_bytes, p, q, k, v, o, lse, d_o, dq,
                                        dk, dv, workspace);
    if (s != ATTN_OK)
        return s;
    if (step_device_cc() < 80)
        return ATTN_ERR_UNSUPPORTED;
    /* D = 64: Br x Bc = 128 x 128; D = 128: 64 x 128 (see the header) */
    s = p->head_dim == 64 ? bwd_prepare<64, 128>() : bwd_prepare<128, 64>();
    if (s != ATTN_OK)
        return s;
    const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
    const int D = p->head_dim;
    float *dq_acc = (float *)workspace;
    float *Di = (float *)((char *)workspace + bwd_align256(rows * D * 4));

    /* 1. Di = rowsum(dO o O); dq_acc = 0 */
    const unsigned warps = bwd_threads / 32;
    bwd_preprocess<<<(unsigned)((rows + warps - 1) / warps), bwd_threads, 0, stream>>>(
        (const __nv_bfloat16 *)d_o, (const __nv_bfloat16 *)o, Di, dq_acc, rows, D);
    if (cudaGetLastError() != cudaSuccess)
        return ATTN_ERR_CUDA;
    /* 2. dK, dV, and dS K into dq_acc */
    if (D == 64)
        bwd_launch<64, 128>(p, q, k, v, d_o, lse, Di, dq_acc, dk, dv, stream);
    else
        bwd_launch<128, 64>(p, q, k, v, d_o, lse, Di, dq_acc, dk, dv, stream);
    if (cudaGetLastError() != cudaSuccess)
        return ATTN_ERR_CUDA;
    /* 3. dQ = scale dq_acc, to bf16 */
    const size_t n4 = rows * D / 4;
    const size_t blocks = (n4 + bwd_threads - 1) / bwd_threads;
    bwd_convert_dq<<<(unsigned)(blocks < (1u << 20) ? blocks : (1u << 20)), bwd_threads, 0,
                     stream>>>(dq_acc, (__nv_bfloat16 *)dq, n4, p->scale);
    return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
}

extern "C" const attn_step attn_step_info = {
    "06_backward",
    "FA2 tiled backward: Di = rowsum(dO o O), dK, dV per key tile in registers, dQ by atomics; no N x N",
    supports, workspace_bytes, forward, backward, nullptr,
    80, 0, "needs sm_80 or newer (mma.sync bf16, cp.async)",
};
