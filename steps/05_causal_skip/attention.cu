/* Step 05: causal tile skipping.
 *
 * The change against step 04: with a causal mask, a query block of rows q0 .. q0+Br-1 sees no key
 * past q0+Br-1, so its key loop stops at the tile holding that key: it visits min(Nk, q0 + Br)
 * keys instead of Nk. Of the tiles it does visit, only those that cross the diagonal (last key
 * > q0) and the ragged last tile (keys past Nk) need the mask; every other tile is fully visible
 * and skips the mask code entirely (one uniform branch per tile; steps 03-04 paid a compare and
 * a select per score on every tile of a causal problem). Causal is top-left (key j visible to
 * query i iff j <= i), so with Nq > Nk the late rows see all Nk keys, with Nq < Nk most key
 * tiles are skipped, and every row still sees key 0 (tile 0 is always visited: no NaN).
 *
 * Launch order. Block x of a causal grid takes query block Tr-1-x: the blocks with the most
 * keys start first, and the short ones fill the tail of the grid (FA2 launches them ascending,
 * so its heaviest blocks run last). Non-causal problems are unchanged.
 *
 * The prediction. A causal problem does half the work (4*B*H*N^2*D/2 FLOPs, the convention
 * everywhere here) and step 04 computed all of it, so its causal TFLOP/s was about half its
 * non-causal number. Now the work done is N^2/2 plus the diagonal tiles, Br*N/2 more pairs:
 * at N=4096, Br=128 that is 3% extra. Expect the causal wall clock to about halve, i.e. causal
 * TFLOP/s close to step 04's non-causal (minus the diagonal tiles and a less even grid: FA2 on the
 * H200 reaches 78% of its non-causal number at 4k and 97% at 16k). Non-causal: unchanged, or a
 * little faster for the unmasked interior tiles (the ragged mask is now behind a branch).
 *
 * Everything else (fragment layout, the -DTILE_* overrides, D = 128's tile) is step 03's; D = 64's
 * tile is 128x128 with 2 stages (below).
 * Limits: those of step 04 (bf16, D 64 or 128, scale > 0, B*H <= 65535, forward only).
 *
 * Run:  build/attn run --step 05 --shape 4,8,4096,4096,64 --dtype bf16 --causal
 *       make diff A=04 B=05
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

extern "C" const attn_step attn_step_info = {
    "05_causal_skip",
    "causal key loop stops at the diagonal; only diagonal and ragged tiles run the mask",
    supports, workspace_bytes, forward, nullptr, nullptr,
    80, 0, "needs sm_80 or newer (mma.sync bf16, cp.async)",
};
