/* Step 03: larger tiles, shaped for the tensor cores.
 *
 * The change against step 02: the same online softmax, but the tiles are big enough (128 query
 * rows, 64-128 keys) that K and V are read from device memory 8x less often, and both products
 * run on the tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate) instead of fp32 FMAs.
 *
 * What moved where. In step 02 one thread owned one score and one row's features. Now a warp
 * owns Br/WARPS whole query rows (a multiple of 16: no reduction ever crosses warps), and inside
 * the warp each lane owns the pieces of the mma fragments below (g = lane / 4, t = lane % 4;
 * mt = the warp's 16-row slice, n = an 8-key column block, dn = an 8-feature column block):
 *
 *   what                  where                       lane's part
 *   Q tile (Br x D)       smem, swizzled; A frags     rows g, g+8 of each 16-row slice
 *   K, V tiles (Bc x D)   smem ring of STAGES,        read by ldmatrix (K) / ldmatrix.trans (V)
 *                         swizzled, zero-filled       as B fragments, shared by all warps
 *   S = Q K^T (fp32)      registers s[mt][n][4]       S[g][8n+2t..+1], S[g+8][8n+2t..+1]
 *   P (bf16)              registers, A frags of P V   the same elements: C frag == A frag
 *   m_i, l_i              registers m_i[mt][2], ...   rows g and g+8; max over the quad's 4 lanes
 *   acc = O (fp32)        registers o[mt][dn][4]      O[g][8dn+2t..+1], O[g+8][8dn+2t..+1]
 *
 * P never touches shared memory: the accumulators of two adjacent 16x8 S tiles, packed to bf16,
 * are exactly the A fragment of the next 16x16 product (common/mma_sm80.cuh). Shared memory rows
 * are 128 or 256 bytes, so the 8 rows one ldmatrix reads would all start on the same banks; the
 * 16-byte chunk index is XORed with (row % 8) on store and load (no padding; TMA and wgmma later
 * want this same 128-byte swizzle). Loads are cp.async (global -> smem, no registers), issued
 * STAGES-1 tiles ahead, so the next tiles stream in while the tensor cores work on this one.
 *
 * The prediction. Every query block of Br rows reads all of K and V once: 2*Nk*D bf16 for
 * 4*Br*Nk*D FLOPs, 1/Br bytes per FLOP. Step 02 (Br = 16): 0.0625 B/FLOP, i.e. about 70 TFLOP/s
 * from the 4.3 TB/s of HBM even before its fp32 FMAs (67 TFLOP/s peak on the H200) bind. Here
 * (Br = 128): 0.0078 B/FLOP, 550 TFLOP/s from HBM, so memory is no longer the wall; the dense
 * bf16 peak is 989 TFLOP/s, of which mma.sync kernels of the FlashAttention-2 class reach 30-37%
 * on Hopper (they cannot overlap the softmax with the matmuls, and each warp re-reads K and V
 * from shared memory: 4*Bc*D bytes per 128*Bc*D FLOPs = 1/32 B/FLOP, at ~4096 FLOP/clk that is
 * the SM's 128 B/clk of shared memory). Expect ~250-300 TFLOP/s at D=64 and ~300-345 at D=128
 * (SDPA's FA2 backend on the H200: 297 / 324 at N=4k in our own runs). D=64 is lower: each score
 * costs one exp against 4*D matmul FLOPs, and here the exp is the accurate expf (step 04).
 *
 * Tiles: the best of the tile sweep on the H200 (make tiles; bench/tiles.sh): D=64: Br=128,
 * Bc=64, 4 warps, 3 stages; D=128: Br=128, Bc=64, 4 warps, 2 stages (FlashAttention-2 ships
 * 128x128 at D=64, 7% slower here). -DTILE_BR=.. -DTILE_BC=.. -DTILE_WARPS=.. -DTILE_STAGES=.. (all four)
 * replaces both, for tile sweeps; a config that cannot work is not compiled and supports() says
 * why. Q's fragments stay in registers for the whole key loop when they fit (Q_IN_REGS below);
 * at 32 rows per warp they do not (D=128: Q 64 + O 128 + S 64 registers per thread), and Q is
 * re-read from shared memory with ldmatrix for each key tile, as FlashAttention-2 does.
 *
 * Limits: bf16 only (fp32 -> ATTN_ERR_UNSUPPORTED; steps 00-02 take it); head_dim 64 or 128;
 * B*H <= 65535 (grid y); forward only; sm_80 or newer. Causal is still by masking: every key
 * tile is computed, and every tile of a causal problem pays for the mask compare (step 05 skips).
 *
 * Run:  build/attn run --step 03 --shape 4,8,4096,4096,64 --dtype bf16 [--causal]
 *       make diff A=02 B=03
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "attention.h"
#include "mma_sm80.cuh"
#include "step.cuh"

typedef __nv_bfloat16 bf16;

/* The tiles: one config per head dim, or the sweep's override for both. Shipped: the best of the
 * H200 tile sweep (bench/results/h200/tiles.csv, N=4096): D=64 128x64, 4 warps, 3 stages (244
 * TFLOP/s; FA2's 128x128 gave 226), D=128 128x64, 4 warps, 2 stages (293). */
struct tiles {
    int Br, Bc, warps, stages;
};
#if defined(TILE_BR) && defined(TILE_BC) && defined(TILE_WARPS) && defined(TILE_STAGES)
constexpr tiles tiles_for(int D) { return (void)D, tiles{TILE_BR, TILE_BC, TILE_WARPS, TILE_STAGES}; }
#else
constexpr tiles tiles_for(int D) { return D == 64 ? tiles{128, 64, 4, 3} : tiles{128, 64, 4, 2}; }
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
              bf16 *__restrict__ O, float *__restrict__ lse, int Nq, int Nk, float scale,
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
    const int q0 = blockIdx.x * Br;
    const int wr = warp * RW;   /* the warp's first row in the tile */
    Q += bh * Nq * D;
    K += bh * Nk * D;
    V += bh * Nk * D;
    const int Tc = (Nk + Bc - 1) / Bc;

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

        /* Scale, then mask: keys past Nk (only the last tile has any) and, if causal, keys
         * after the row. Element e of s[mt][n] is row wr + 16mt + g + 8(e/2), key 8n + 2t + e%2
         * of the tile; the row sees the tile's keys below lim, so one compare per score. */
        const bool ragged = k0 + Bc > Nk;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = q0 + wr + mt * 16 + g + 8 * h;
                const int lim = (causal ? min(Nk, row + 1) : Nk) - k0 - 2 * t;
#pragma unroll
                for (int n = 0; n < NT; n++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        s[mt][n][2 * h + e] *= scale;
                        if ((ragged || causal) && n * 8 + e >= lim)
                            s[mt][n][2 * h + e] = -INFINITY;
                    }
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
                const float m_new = fmaxf(m_i[mt][h], mx);
                /* m_new is finite: key 0 is in tile 0 and every row sees it. The guard keeps
                 * -inf - -inf = NaN out all the same (FA2's Check_inf). */
                const float m_use = m_new == -INFINITY ? 0.f : m_new;
                const float alpha = expf(m_i[mt][h] - m_use);   /* 0 on the first tile */
                m_i[mt][h] = m_new;
                float rs = 0.f;
#pragma unroll
                for (int n = 0; n < NT; n++)
#pragma unroll
                    for (int e = 2 * h; e < 2 * h + 2; e++) {
                        s[mt][n][e] = expf(s[mt][n][e] - m_use);
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
                lse[bh * Nq + q0 + r] = m_i[mt][h] + logf(l);
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
        *why = "forward only (the tiled backward is step 06)";
        return ATTN_ERR_UNSUPPORTED;
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
    const char *w = p->head_dim == 64 ? tiles_why<64>() : tiles_why<128>();
    if (w) {
        *why = w;
        return ATTN_ERR_UNSUPPORTED;
    }
    *why = NULL;
    return ATTN_OK;
}

static size_t workspace_bytes(const attn_problem *p, int backward)
{
    (void)p;
    (void)backward;
    return 0;
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
                                                   p->seq_k, p->scale, p->causal);
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

extern "C" const attn_step attn_step_info = {
    "03_larger_tiles",
    "128-row tiles on the tensor cores: mma.sync bf16, P in registers, swizzled cp.async K/V ring",
    supports, workspace_bytes, forward, nullptr, nullptr,
    80, 0, "needs sm_80 or newer (mma.sync bf16, cp.async)",
};
