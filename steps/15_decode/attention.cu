/* Step 15: decode. Few queries against a long K/V cache, split across the SMs (split-KV).
 *
 * The one idea: when Nq is 1 to 16 (a model generating tokens, one step at a time), attention
 * stops being a matrix product and becomes a read of the K/V cache. At 8,32,1,32768,128 with 8
 * K/V heads the forward does 4 * B * H * Nq * Nk * D = 4.3 GFLOP on 1.07 GB of K and V: 4 FLOPs
 * per byte, 50x below the H200's ridge point (990 TFLOP/s / 4.8 TB/s = 206). The time is the
 * bytes: the best any kernel can do is read K and V once at HBM speed. Two things stand in the
 * way:
 *   - The query heads of one K/V group (g = H / H_kv of them, adjacent in memory) each read the
 *     same K and V. Here they are packed with their Nq queries into the rows of one tile, g * Nq
 *     rows (4 at g = 4, Nq = 1; padded to the 16 rows of an mma), so K and V are read once per
 *     group, not once per query head. Step 14 reads them per query tile of one head (from L2 for
 *     the other heads of the group, but it runs B * H work tiles of one row each).
 *   - B * H_kv work tiles (64 at B = 8, H_kv = 8; 8 at B = 1) cannot fill 132 SMs, and one
 *     block cannot pull more than its share of HBM. So the keys are split: each of `splits`
 *     blocks of a work tile reads a range of whole key tiles and writes a partial (O, lse) to
 *     the workspace; a second, small kernel merges the partials of each row by their lse
 *     (launched behind the first with programmatic dependent launch, so that its launch
 *     overlaps the first one's end). That
 *     is step 11's stream-K merge (two pieces of a work tile, one m and l each) made the rule:
 *     O = sum_s 2^(lse_s - M) O_s / sum_s 2^(lse_s - M), M = max_s lse_s. splits is chosen per
 *     problem so that B * H_kv * splits blocks fill the GPU in whole waves (choose_splits);
 *     splits == 1 (enough work tiles already) writes O directly and skips the merge.
 * Inside a block: 4 warps, each 16 rows (one m16 slice) x a quarter, half or all of every key
 * tile (warps_n = 4, 2, 1 for g * Nq <= 16, 32, 64 rows), each with its own online softmax; at
 * the end the warps' (m, l, O) are merged through shared memory, the same merge again. K and V
 * stream through a ring of STAGES stages filled by cp.async (step 03's loader: every thread
 * copies 16 bytes at a time, rows past Nk zero-filled), so a block keeps two 32 KB tiles in
 * flight; S = Q K^T and O += P V are mma.sync m16n8k16 bf16 with fp32 accumulators (step 03's
 * fragments, read with ldmatrix from the same swizzle), softmax in exp2. A TMA ring (step 08's
 * copy engine, one thread issuing) measured 5-6 % slower here (bench/experiments/15_decode:
 * 4,010 against 4,238 GB/s at 8,32,1,32768,128,8), so the step keeps the loader every thread
 * shares. Tensor cores here are not for speed (the FLOPs
 * are 1 per byte) but because the fragments and the P-in-registers trick are the ones the reader
 * knows.
 *
 * The prediction (H200, HBM 4.8 TB/s by the datasheet, ~4.3 TB/s for a device-to-device copy):
 * bytes read = 2 * B * H_kv * Nk * D * 2 (K and V, bf16); everything else (Q, O, partials) is
 * under 1 % of it at the six measured shapes. HBM answers in ~1 us, so 4.8 TB/s needs ~4.8 MB
 * in flight, 36 KB per SM; two blocks per SM, each with 2 of its 3 stages loading while the
 * third is computed on, keep 128 KB in flight. So the read should run at 88-93 % of the peak,
 * 4.2-4.5 TB/s, wherever K and V exceed a few hundred MB: level with cuDNN (4.2-4.5 TB/s) at one
 * query, and ~3x cuDNN, ~1.4x FlashAttention-4 at Nq = 4 with groups of 4 (16 rows: the same
 * bytes, four times the FLOPs, still memory-bound). Small caches (Nk <= 4k at B = 1, a few MB)
 * are bound by launch and pipeline fill: a few us.
 *
 * Limits: decode shapes only, forward only: bf16, D = 64 or 128, Nq <= 16, any Nk, any H_kv
 * dividing H, any scale the contract takes, causal top-left as the contract says (a row i sees
 * keys 0..i: with Nq <= 16 that is at most 16 keys, one tile, no split; a decode caller whose
 * queries come after the cache wants every key, causal = 0). Anything else is
 * ATTN_ERR_UNSUPPORTED saying so; the general forward is step 14. g * Nq > 64 rows take several
 * row tiles (blocks) per K/V head, each reading K and V (together, from L2 after the first).
 * Workspace: the partials, (D + 1) floats per row per split, for splits up to what 1024 blocks
 * allow (0 when one split is all a problem can have). Hopper only (griddepcontrol, the
 * programmatic dependent launch; built for sm_90a like steps 07-14, though it uses neither TMA,
 * wgmma nor setmaxnreg). Shared memory: (rows + 3 stages x 2 x Bc) x D x 2 bytes, 98-112 KB per
 * block: two blocks per SM where the occupancy API says they fit (it sizes the waves).
 * Build-time knobs, for experiments (bench/experiments/15_decode/run.sh builds variants):
 * -DDECODE_BC=n -DDECODE_STAGES=n (the key tile and ring depth, both head dims), -DDECODE_SPLITS=n
 * (force n splits, within the workspace), -DDECODE_BLOCKS_PER_SM=n (the waves choose_splits
 * fills; default: the occupancy), -DDECODE_MIN_BLOCKS=n (blocks per SM the registers allow: 2).
 *
 * Run:  build/attn run --step 15 --shape 8,32,1,32768,128,8 --dtype bf16
 *       build/attn bench --sweep decode --steps 15
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "attention.h"
#include "mma_sm80.cuh"
#include "step.cuh"

typedef __nv_bfloat16 bf16;

constexpr int WARPS = 4, THREADS = WARPS * 32;
constexpr int MAX_ROWS = 16 * WARPS;   /* rows of one row tile: every warp a 16-row slice */
constexpr float LN2 = 0.693147180559945309f, LOG2E = 1.44269504088896341f;

/* The key tile and the ring, per head dim: 32 KB of K and V per stage either way (64 keys x
 * 128 features, 128 x 64), 3 stages: 96 KB + Q, two blocks per SM, so 4 stages' worth of
 * loads (128 KB) in flight per SM while two are computed on. */
struct tiles {
    int Bc, stages;
};
#if defined(DECODE_BC) && defined(DECODE_STAGES)
constexpr tiles tiles_for(int D) { return (void)D, tiles{DECODE_BC, DECODE_STAGES}; }
#else
constexpr tiles tiles_for(int D) { return D == 64 ? tiles{128, 3} : tiles{64, 3}; }
#endif
#ifndef DECODE_SPLITS
#define DECODE_SPLITS 0          /* 0: choose_splits decides */
#endif
#ifndef DECODE_BLOCKS_PER_SM
#define DECODE_BLOCKS_PER_SM 0   /* 0: the occupancy the kernel gets */
#endif
#ifndef DECODE_MIN_BLOCKS
#define DECODE_MIN_BLOCKS 2      /* blocks per SM the registers must allow (__launch_bounds__) */
#endif

/* The warps of a block: warps_m slices of 16 rows x warps_n slices of every key tile. */
template <int WM> struct warp_grid {
    static constexpr int WN = WARPS / WM, BM = 16 * WM;
};

/* Shared memory: Q [BM][D], then STAGES x (K [Bc][D], V [Bc][D]), bf16. After the key loop the
 * ring is reused for the warps' merge: m and l [2][WN][BM], the row results [BM], and O
 * [WN][BM][D + 8] fp32 (8 floats of padding: rows g and g + 4 of a fragment land on other banks). */
constexpr int smem_bytes(int D, int BM, tiles t) { return (BM * D + t.stages * 2 * t.Bc * D) * 2; }
constexpr int merge_bytes(int D) { return (3 * MAX_ROWS + MAX_ROWS * (D + 8)) * 4; }
constexpr int kSmemMax = 227 * 1024;
constexpr bool tiles_ok(int D, tiles t)
{
    return t.Bc >= 64 && t.Bc % 64 == 0 && t.stages >= 2 &&
           t.stages * 2 * t.Bc * D * 2 >= merge_bytes(D) &&
           smem_bytes(D, MAX_ROWS, t) <= kSmemMax;
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
 * zero-filled (an absent key must not bring garbage: 0 * NaN = NaN in P V). Step 03's. */
template <int D, int ROWS>
__device__ __forceinline__ void load_tile(uint32_t s, const bf16 *g, int r0, int N)
{
    constexpr int CH = D / 8;             /* 16-byte chunks per row */
    constexpr int RP = THREADS / CH;      /* rows per pass */
    static_assert(THREADS % CH == 0 && RP % 8 == 0, "a pass covers whole rows, 8 at a time");
    const int r = threadIdx.x / CH, c = threadIdx.x % CH;
    const bf16 *src = g + (size_t)(r0 + r) * D + c * 8;
#pragma unroll
    for (int i = 0; i < (ROWS + RP - 1) / RP; i++) {
        if (ROWS % RP == 0 || r + i * RP < ROWS) {
            const bool in = r0 + r + i * RP < N;
            cp_async_16(s + swz<D>(r, c) + i * RP * D * 2, in ? src + (size_t)i * RP * D : g, in);
        }
    }
}

/* What a block needs to find its work. A work tile is (K/V head, row tile): the g * Nq = R
 * rows of query heads kvh * g .. + g - 1 (adjacent in Q, O and lse: row r of K/V head u is query
 * row u * R + r of the [B * H * Nq] rows), rows rt * 64 .. of them. Its keys [0, Nk_vis) are
 * T = ceil(Nk_vis / Bc) tiles, cut into `splits` ranges of tiles_per_split. */
struct decode_args {
    const bf16 *Q, *K, *V;   /* [B*H_kv, R, D] (= [B, H, Nq, D]), [B*H_kv, Nk, D] */
    bf16 *O;                 /* [B*H_kv, R, D] */
    float *lse;              /* [B*H_kv, R], natural log */
    float *part_o, *part_lse;   /* splits > 1: [rows, splits, D] and [rows, splits], log2 units */
    int R, Nq, Nk, Nk_vis, n_rt, splits, tiles_per_split, causal;
    float scale_log2;        /* scale * log2(e): scores in log2 units, exp2 in the loop */
};

/* Programmatic dependent launch (sm_90): the split kernel lets the combine, launched behind it
 * on the stream with cudaLaunchAttributeProgrammaticStreamSerialization, start before it ends;
 * the combine's griddepcontrol.wait then blocks until the split kernel has completed and its
 * memory is visible. So the combine's launch overlaps the split kernel's last tiles instead of
 * following them; what it computes is the same. */
__device__ __forceinline__ void griddep_launch_dependents()
{
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
__device__ __forceinline__ void griddep_wait()
{
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

/* ------------------------------------------------------------------------ the split kernel */

/* S = Q K^T for this warp's 16 rows and KW keys of the tile: K [Bc][D] row-major is the
 * "col-major" B operand as it is (ldmatrix without trans), two 8-key blocks per ldmatrix.x4. */
template <int D, int KW>
__device__ __forceinline__ void qk(float (&s)[KW / 8][4], const uint32_t (&q)[D / 16][4],
                                   uint32_t aK, uint32_t yB)
{
#pragma unroll
    for (int n = 0; n < KW / 8; n++)
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
        for (int np = 0; np < KW / 16; np++) {
            uint32_t kf[4];
            ldmatrix_x4(kf, aK + np * 16 * D * 2 + frag_chunk(kk, yB));
            mma_bf16_16816(s[2 * np], q[kk], &kf[0]);
            mma_bf16_16816(s[2 * np + 1], q[kk], &kf[2]);
        }
}

/* Online softmax of the warp's S tile, in log2 units: scale, mask, new running max m, then
 * p = 2^(s - m) in place, l and O rescaled by alpha = 2^(m_old - m). Element e of s[n] is row
 * g + 8(e / 2) of the slice, key key0 + 8n + 2t + e % 2. The scale goes on before the max, so
 * any sign of scale works. A row whose keys so far are all masked (a warp's slice past Nk) keeps
 * m = -inf: the exponent offset is then 0, not -inf (-inf - -inf = NaN), and its p are 0. */
template <int D, int KW>
__device__ __forceinline__ void online_softmax(float (&s)[KW / 8][4], float (&m)[2], float (&l)[2],
                                               float (&o)[D / 8][4], float c, bool mask, int key0,
                                               const int (&lim)[2], int t)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < KW / 8; n++)
#pragma unroll
            for (int e = 2 * h; e < 2 * h + 2; e++) {
                float x = s[n][e] * c;
                if (mask && key0 + 8 * n + 2 * t + (e & 1) >= lim[h])
                    x = -INFINITY;
                s[n][e] = x;
                mx = fmaxf(mx, x);
            }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));   /* a row lives in a quad */
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m[h], mx);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        const float alpha = ex2_approx(m[h] - m_use);
        m[h] = m_new;
        float rs = 0.f;
#pragma unroll
        for (int n = 0; n < KW / 8; n++)
#pragma unroll
            for (int e = 2 * h; e < 2 * h + 2; e++) {
                s[n][e] = ex2_approx(s[n][e] - m_use);
                rs += s[n][e];
            }
        l[h] = l[h] * alpha + rs;   /* this lane's part; the quad's sum is taken at the end */
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            o[dn][2 * h] *= alpha;
            o[dn][2 * h + 1] *= alpha;
        }
    }
}

/* O += P V: P's A fragment for keys 16kb.. is S blocks 2kb, 2kb + 1 packed to bf16 (FA2's
 * register trick); V [Bc][D] read transposed by ldmatrix.trans. */
template <int D, int KW>
__device__ __forceinline__ void pv(float (&o)[D / 8][4], const float (&s)[KW / 8][4], uint32_t aV,
                                   uint32_t yA)
{
#pragma unroll
    for (int kb = 0; kb < KW / 16; kb++) {
        const uint32_t pf[4] = {pack_bf16(s[2 * kb][0], s[2 * kb][1]),
                                pack_bf16(s[2 * kb][2], s[2 * kb][3]),
                                pack_bf16(s[2 * kb + 1][0], s[2 * kb + 1][1]),
                                pack_bf16(s[2 * kb + 1][2], s[2 * kb + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
            uint32_t vf[4];
            ldmatrix_x4_trans(vf, aV + kb * 16 * D * 2 + frag_chunk(dp, yA));
            mma_bf16_16816(o[2 * dp], pf, &vf[0]);
            mma_bf16_16816(o[2 * dp + 1], pf, &vf[2]);
        }
    }
}

/* The warps' merge and the store. Each warp holds (m, l, O) over its slice of the keys; the
 * block's result is the softmax merge of the WN slices, per row: M = max m_w, factor_w =
 * 2^(m_w - M) / L with L = sum_w l_w 2^(m_w - M). Then splits == 1: O (bf16) and lse (natural
 * log) are final; else the split's normalised O_s (fp32) and lse_s = M + log2 L (log2 units) go to
 * the workspace for decode_combine. Runs after the ring is drained: it reuses its memory. */
template <int D, int WM>
__device__ __forceinline__ void merge_and_store(unsigned char *ring, const decode_args &a,
                                                const float (&o)[D / 8][4], const float (&m)[2],
                                                float (&l)[2], size_t unit, int r0, int split)
{
    constexpr int WN = warp_grid<WM>::WN, BM = warp_grid<WM>::BM, OS = D + 8;
    float *mw = reinterpret_cast<float *>(ring);   /* [WN][BM] m, then factor */
    float *lw = mw + MAX_ROWS;                      /* [WN][BM] l */
    float *row_lse2 = lw + MAX_ROWS;                /* [BM] */
    float *ow = row_lse2 + MAX_ROWS;                /* [WN][BM][OS] */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int wm = warp / WN, wn = warp % WN;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        const int rr = wm * 16 + g + 8 * h;
        if (t == 0) {
            mw[wn * BM + rr] = m[h];
            lw[wn * BM + rr] = l[h];
        }
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++)
            *reinterpret_cast<float2 *>(&ow[(wn * BM + rr) * OS + dn * 8 + 2 * t]) =
                make_float2(o[dn][2 * h], o[dn][2 * h + 1]);
    }
    __syncthreads();
    if (threadIdx.x < BM) {
        const int r = threadIdx.x;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < WN; w++)
            M = fmaxf(M, mw[w * BM + r]);
        const float M_use = M == -INFINITY ? 0.f : M;
        float L = 0.f, f[WN];
#pragma unroll
        for (int w = 0; w < WN; w++) {
            f[w] = ex2_approx(mw[w * BM + r] - M_use);
            L += lw[w * BM + r] * f[w];
        }
        const float inv = L > 0.f ? 1.f / L : 0.f;
#pragma unroll
        for (int w = 0; w < WN; w++)
            mw[w * BM + r] = f[w] * inv;
        row_lse2[r] = M_use + log2f(L);
    }
    __syncthreads();
    const int rows = min(BM, a.R - r0);
    const size_t row0 = unit * a.R + r0;   /* the tile's first row of the B*H*Nq */
    for (int i = threadIdx.x; i < rows * (D / 4); i += THREADS) {
        const int r = i / (D / 4), c = 4 * (i % (D / 4));
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int w = 0; w < WN; w++) {
            const float fw = mw[w * BM + r];
            const float4 y = *reinterpret_cast<const float4 *>(&ow[(w * BM + r) * OS + c]);
            x.x += fw * y.x, x.y += fw * y.y, x.z += fw * y.z, x.w += fw * y.w;
        }
        if (a.splits == 1) {
            const uint2 b = make_uint2(pack_bf16(x.x, x.y), pack_bf16(x.z, x.w));
            *reinterpret_cast<uint2 *>(a.O + (row0 + r) * D + c) = b;
        } else {
            *reinterpret_cast<float4 *>(a.part_o + ((row0 + r) * a.splits + split) * D + c) = x;
        }
    }
    if (threadIdx.x < rows) {
        if (a.splits == 1)
            a.lse[row0 + threadIdx.x] = row_lse2[threadIdx.x] * LN2;
        else
            a.part_lse[(row0 + threadIdx.x) * a.splits + split] = row_lse2[threadIdx.x];
    }
}

/* grid: B*H_kv * splits * n_rt blocks, row tile fastest (the blocks that share a K/V range run
 * together, so the second row tile's K and V come from L2), then split, then K/V head. */
template <int D, int WM, int Bc, int STAGES>
__global__ void __launch_bounds__(THREADS, DECODE_MIN_BLOCKS) decode_fwd(const decode_args a)
{
    constexpr int WN = warp_grid<WM>::WN, BM = warp_grid<WM>::BM;
    constexpr int KW = Bc / WN;            /* keys of a tile per warp */
    constexpr uint32_t TILE = Bc * D * 2;  /* bytes of one K or V tile */
    static_assert(KW % 16 == 0, "a warp's keys are whole k16 steps of P V");

    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t sQ = smem_u32(smem);
    const uint32_t sKV = sQ + BM * D * 2;   /* stage s: K at sKV + 2s*TILE, V at + TILE */

    const int rt = blockIdx.x % a.n_rt;
    const int split = (blockIdx.x / a.n_rt) % a.splits;
    const size_t unit = blockIdx.x / a.n_rt / a.splits;   /* K/V head b * H_kv + kvh */
    const int r0 = rt * BM;
    const bf16 *Q = a.Q + unit * a.R * D;
    const bf16 *K = a.K + unit * a.Nk * D, *V = a.V + unit * a.Nk * D;
    const int T = (a.Nk_vis + Bc - 1) / Bc;
    const int j0 = split * a.tiles_per_split, n = min(T - j0, a.tiles_per_split);

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int wm = warp / WN, wn = warp % WN;

    /* The combine (launched after this kernel, when there are splits) may start as soon as every
     * block of this grid has started: its blocks then wait in griddepcontrol.wait, launched and
     * resident, instead of being launched after the last block of this grid ends. */
    griddep_launch_dependents();

    /* Prologue: Q (one group), then key tiles 0 .. STAGES-2 of the range (one group each). */
    load_tile<D, BM>(sQ, Q, r0, a.R);
    cp_async_commit();
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < n) {
            load_tile<D, Bc>(sKV + 2 * st * TILE, K, (j0 + st) * Bc, a.Nk_vis);
            load_tile<D, Bc>(sKV + 2 * st * TILE + TILE, V, (j0 + st) * Bc, a.Nk_vis);
        }
        cp_async_commit();
    }

    /* ldmatrix lanes, as step 03: A of Q and B of V (trans): row L % 16, half L / 16 -> yA;
     * B of K: row (L/16)*8 + L % 8, half (L/8) % 2 -> yB. */
    const uint32_t yA = (lane / 16) ^ (lane % 8), yB = ((lane / 8) % 2) ^ (lane % 8);
    uint32_t q[D / 16][4];
    cp_async_wait<STAGES - 1>();   /* the Q group is the oldest */
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        ldmatrix_x4(q[kk], sQ + (uint32_t)(wm * 16 + lane % 16) * D * 2 + frag_chunk(kk, yA));

    /* The rows' key limits: keys at or past lim are masked. Row r of the work tile is query
     * r % Nq of its head; causal, it sees keys 0 .. r % Nq. */
    int lim[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int i = (r0 + wm * 16 + g + 8 * h) % a.Nq;
        lim[h] = a.causal ? min(a.Nk, i + 1) : a.Nk;
    }
    float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
    for (int dn = 0; dn < D / 8; dn++)
        o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.f;

    for (int jj = 0; jj < n; jj++) {
        /* Tile jj has landed and everyone is done with tile jj-1, whose stage the prefetch of
         * tile jj+STAGES-1 refills. */
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int jn = jj + STAGES - 1;
        if (jn < n) {
            const uint32_t sn = sKV + 2 * (jn % STAGES) * TILE;
            load_tile<D, Bc>(sn, K, (j0 + jn) * Bc, a.Nk_vis);
            load_tile<D, Bc>(sn + TILE, V, (j0 + jn) * Bc, a.Nk_vis);
        }
        cp_async_commit();
        const uint32_t sK = sKV + 2 * (jj % STAGES) * TILE, sV = sK + TILE;
        const int key0 = (j0 + jj) * Bc + wn * KW;   /* this warp's first key */

        float s[KW / 8][4];
        qk<D, KW>(s, q, sK + (uint32_t)(wn * KW + (lane / 16) * 8 + lane % 8) * D * 2, yB);
        /* The mask only where it can bite: the tile past Nk (the last, ragged), and causal. */
        const bool mask = a.causal || (j0 + jj + 1) * Bc > a.Nk;
        online_softmax<D, KW>(s, m, l, o, a.scale_log2, mask, key0, lim, t);
        pv<D, KW>(o, s, sV + (uint32_t)(wn * KW + lane % 16) * D * 2, yA);
    }
    cp_async_wait<0>();   /* only empty groups can be left */
    __syncthreads();      /* every warp is done with the ring: the merge reuses it */
    merge_and_store<D, WM>(smem + BM * D * 2, a, o, m, l, unit, r0, split);
}

/* ------------------------------------------------------------------------- the combine */

/* One block per query row: the splits' partials (O_s normalised, lse_s in log2 units) merged
 * by their lse, FlashDecoding's rule: M = max lse_s, w_s = 2^(lse_s - M),
 * O = sum w_s O_s / sum w_s, lse = (M + log2 sum w_s) ln 2. Thread (sg, c) takes features
 * 4c .. 4c + 3 of splits sg, sg + SG, ...; the SG groups' sums meet in shared memory. */
template <int D>
__global__ void __launch_bounds__(THREADS)
decode_combine(const float *__restrict__ part_o, const float *__restrict__ part_lse,
               bf16 *__restrict__ O, float *__restrict__ lse, int splits)
{
    constexpr int C = D / 4, SG = THREADS / C;
    __shared__ float red[THREADS];
    __shared__ float4 acc_s[SG][C];
    __shared__ float l_s[SG];
    const size_t row = blockIdx.x;
    const float *pl = part_lse + row * splits;
    const int c = threadIdx.x % C, sg = threadIdx.x / C;
    griddep_wait();   /* the split kernel has ended and its partials are visible */

    float M = -INFINITY;
    for (int s = threadIdx.x; s < splits; s += THREADS)
        M = fmaxf(M, pl[s]);
    red[threadIdx.x] = M;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
        __syncthreads();
    }
    M = red[0];
    const float M_use = M == -INFINITY ? 0.f : M;

    float L = 0.f;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (int s = sg; s < splits; s += SG) {
        const float w = ex2_approx(pl[s] - M_use);
        const float4 y = *reinterpret_cast<const float4 *>(part_o + (row * splits + s) * D + 4 * c);
        L += w;
        x.x += w * y.x, x.y += w * y.y, x.z += w * y.z, x.w += w * y.w;
    }
    acc_s[sg][c] = x;
    if (c == 0)
        l_s[sg] = L;
    __syncthreads();
    if (sg == 0) {
        L = 0.f;
#pragma unroll
        for (int i = 0; i < SG; i++)
            L += l_s[i];
        x = acc_s[0][c];
#pragma unroll
        for (int i = 1; i < SG; i++) {
            const float4 y = acc_s[i][c];
            x.x += y.x, x.y += y.y, x.z += y.z, x.w += y.w;
        }
        const float inv = L > 0.f ? 1.f / L : 0.f;
        *reinterpret_cast<uint2 *>(O + row * D + 4 * c) =
            make_uint2(pack_bf16(x.x * inv, x.y * inv), pack_bf16(x.z * inv, x.w * inv));
        if (c == 0)
            lse[row] = (M_use + log2f(L)) * LN2;
    }
}

/* ------------------------------------------------------------------------ launch wrapper */

/* The keys a problem reads: all Nk, or causal (top-left) keys 0 .. Nq - 1 only. */
static int keys_visible(const attn_problem *p)
{
    return p->causal && p->seq_q < p->seq_k ? p->seq_q : p->seq_k;
}

/* Rows of a work tile (R = g * Nq), row tiles per K/V head, work tiles (K/V heads x row tiles) */
static long long rows_per_group(const attn_problem *p)
{
    return (long long)(p->heads / attn_heads_kv(p)) * p->seq_q;
}
static long long row_tiles(const attn_problem *p)
{
    return (rows_per_group(p) + MAX_ROWS - 1) / MAX_ROWS;
}
static long long work_tiles(const attn_problem *p)
{
    return (long long)p->batch * attn_heads_kv(p) * row_tiles(p);
}
static int key_tiles(const attn_problem *p)
{
    const int bc = p->head_dim == 64 ? tiles_for(64).Bc : tiles_for(128).Bc;
    return (keys_visible(p) + bc - 1) / bc;
}

/* The most splits a problem may get: as many as make up SPLIT_BLOCKS blocks with its work tiles
 * (more than any GPU runs at once: 132 SMs x 2 blocks on an H200), and no more than its key
 * tiles. The workspace is asked for before the launch, maybe for another GPU, so this bound,
 * not the GPU's, sizes it. */
constexpr long long SPLIT_BLOCKS = 1024;
static int max_splits(const attn_problem *p)
{
    const long long w = work_tiles(p), by_blocks = (SPLIT_BLOCKS + w - 1) / w;
    const int T = key_tiles(p);
    return (int)(by_blocks < T ? by_blocks : T);
}

static attn_status supports(const attn_problem *p, int backward, const char **why)
{
    attn_status s = attn_problem_valid_gqa(p, why);
    if (s != ATTN_OK)
        return s;
    if (backward) {
        *why = "decode step: forward only (a backward of a decode step is a training problem: "
               "steps 13 and 14)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (p->dtype != ATTN_BF16) {
        *why = "decode step: bf16 only (mma.sync bf16); steps 00-02 take fp32";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (p->head_dim != 64 && p->head_dim != 128) {
        *why = "decode step: head_dim must be 64 or 128 (the tiles and fragments are sized per D)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (p->seq_q > 16) {
        *why = "decode step: Nq <= 16 only (a few queries against a long K/V cache, packed with "
               "their K/V group's heads into one tile); the general forward is step 14";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (rows_per_group(p) > 2147483647ll - MAX_ROWS) {
        *why = "decode step: (H / H_kv) * Nq rows per K/V group above 2^31 (an int in the kernel)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (work_tiles(p) * max_splits(p) > 2147483647ll) {
        *why = "decode step: B*H_kv*ceil(g*Nq/64) above 2^31-1 blocks (the grid limit)";
        return ATTN_ERR_UNSUPPORTED;
    }
    constexpr tiles t64 = tiles_for(64), t128 = tiles_for(128);
    if (!tiles_ok(p->head_dim, p->head_dim == 64 ? t64 : t128)) {
        *why = "decode step: the tile build (DECODE_BC, DECODE_STAGES) is not a valid one: Bc a "
               "multiple of 64, 2+ stages, the merge and 64 rows of Q in 227 KB";
        return ATTN_ERR_UNSUPPORTED;
    }
    *why = NULL;
    return ATTN_OK;
}

/* The partials: (D + 1) floats per query row per split, O_s then lse_s; none at one split. */
static size_t workspace_bytes(const attn_problem *p, int backward)
{
    const char *why;
    if (backward || supports(p, 0, &why) != ATTN_OK)
        return 0;
    const int smax = max_splits(p);
    if (smax <= 1)
        return 0;
    const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
    return rows * (size_t)smax * (p->head_dim + 1) * sizeof(float);
}

/* How many splits: each cut costs a block's start (its pipeline filling before the first tile
 * is computed, ~SPLIT_COST tiles' time) and, from 2 splits on, the combine (~COMBINE_COST). The
 * blocks run in waves of `slots` (SMs x blocks per SM) of equal blocks; the time is waves x
 * (tiles per split + SPLIT_COST). H200 (264 slots), D = 128: 8,32,1,32768,128 with H_kv = 8 is
 * 64 work tiles x 512 key tiles: 4 splits of 128 (256 blocks, one wave); with H_kv = 32, 256
 * work tiles: 1 split (one wave already); B = 1, Nk = 131072: 8 x 2048: 33 splits of 63. */
constexpr int SPLIT_COST = 2, COMBINE_COST = 4;
static int choose_splits(long long work, int T, long long slots, int smax)
{
    int best = 1;
    long long best_cost = -1;
    for (int s = 1; s <= smax; s++) {
        const int per = (T + s - 1) / s;
        if ((T + per - 1) / per != s)
            continue;   /* the same cut as a smaller s, with an empty split */
        const long long waves = (work * s + slots - 1) / slots;
        const long long cost = waves * (per + SPLIT_COST) + (s > 1 ? COMBINE_COST : 0);
        if (best_cost < 0 || cost < best_cost)
            best = s, best_cost = cost;
    }
    return best;
}

template <int D, int WM>
static attn_status launch(const attn_problem *p, const void *q, const void *k, const void *v,
                          void *o, float *lse, void *ws, cudaStream_t stream)
{
    constexpr tiles t = tiles_for(D);
    if constexpr (!tiles_ok(D, t)) {
        (void)p, (void)q, (void)k, (void)v, (void)o, (void)lse, (void)ws, (void)stream;
        return ATTN_ERR_UNSUPPORTED;   /* supports() said why; never compiled */
    } else {
        constexpr int smem = smem_bytes(D, warp_grid<WM>::BM, t);
        auto kernel = decode_fwd<D, WM, t.Bc, t.stages>;
        int dev, sms, optin;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
                cudaSuccess)
            return ATTN_ERR_CUDA;
        if (smem > optin)
            return ATTN_ERR_UNSUPPORTED;   /* an sm_8x part with less shared memory */
        if (smem > 48 * 1024 &&
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
                cudaSuccess)
            return ATTN_ERR_CUDA;
        /* blocks per SM, once per device (a property of the kernel, not of the problem) */
        static int per_sm[16], per_sm_dev[16];
        const int slot = dev & 15;
        if (per_sm_dev[slot] != dev + 1) {
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm[slot], kernel, THREADS,
                                                              smem) != cudaSuccess)
                return ATTN_ERR_CUDA;
            per_sm_dev[slot] = dev + 1;
        }
        const int bps = DECODE_BLOCKS_PER_SM > 0 ? DECODE_BLOCKS_PER_SM
                                                 : (per_sm[slot] > 0 ? per_sm[slot] : 1);
        const long long work = work_tiles(p);
        const int T = key_tiles(p), smax = max_splits(p);
        int splits = DECODE_SPLITS > 0 ? DECODE_SPLITS
                                       : choose_splits(work, T, (long long)sms * bps, smax);
        splits = splits < 1 ? 1 : splits > smax ? smax : splits;
        const int per = (T + splits - 1) / splits;
        splits = (T + per - 1) / per;   /* no empty split */

        const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
        decode_args a;
        a.Q = (const bf16 *)q, a.K = (const bf16 *)k, a.V = (const bf16 *)v;
        a.O = (bf16 *)o, a.lse = lse;
        a.part_o = (float *)ws;
        a.part_lse = splits > 1 ? a.part_o + rows * splits * D : NULL;
        a.R = (int)rows_per_group(p), a.Nq = p->seq_q, a.Nk = p->seq_k;
        a.Nk_vis = keys_visible(p);
        a.n_rt = (int)row_tiles(p), a.splits = splits, a.tiles_per_split = per, a.causal = p->causal;
        a.scale_log2 = p->scale * LOG2E;
        kernel<<<(unsigned)(work * splits), THREADS, smem, stream>>>(a);
        if (cudaGetLastError() != cudaSuccess)
            return ATTN_ERR_CUDA;
        if (splits > 1) {   /* the combine, allowed to launch before the split kernel ends */
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3((unsigned)rows);
            cfg.blockDim = dim3(THREADS);
            cfg.stream = stream;
            cudaLaunchAttribute pdl[1];
            pdl[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            pdl[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.attrs = pdl;
            cfg.numAttrs = 1;
            if (cudaLaunchKernelEx(&cfg, decode_combine<D>, (const float *)a.part_o,
                                   (const float *)a.part_lse, (bf16 *)o, lse, splits) != cudaSuccess)
                return ATTN_ERR_CUDA;
        }
        return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
    }
}

/* The warp grid by the rows of a row tile: 16 rows (one m16 slice, the rest padding) -> 1 x 4
 * warps, each a quarter of every key tile; 32 -> 2 x 2; up to 64 -> 4 x 1. */
template <int D>
static attn_status dispatch(const attn_problem *p, const void *q, const void *k, const void *v,
                            void *o, float *lse, void *ws, cudaStream_t stream)
{
    const long long rows = rows_per_group(p) < MAX_ROWS ? rows_per_group(p) : MAX_ROWS;
    if (rows <= 16)
        return launch<D, 1>(p, q, k, v, o, lse, ws, stream);
    if (rows <= 32)
        return launch<D, 2>(p, q, k, v, o, lse, ws, stream);
    return launch<D, 4>(p, q, k, v, o, lse, ws, stream);
}

static attn_status forward(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream)
{
    attn_status s = step_check_forward(supports, workspace_bytes, p, q, k, v, o, lse, workspace);
    if (s != ATTN_OK)
        return s;
    if (step_device_cc() != 90)   /* built for sm_90a alone (griddepcontrol): never launch elsewhere */
        return ATTN_ERR_UNSUPPORTED;
    if (p->head_dim == 64)
        return dispatch<64>(p, q, k, v, o, lse, workspace, stream);
    return dispatch<128>(p, q, k, v, o, lse, workspace, stream);
}

extern "C" const attn_step attn_step_info = {
    "15_decode",
    "decode (Nq <= 16, forward): a K/V group's heads and queries in one tile, keys split across "
    "the SMs, partials merged by their lse (split-KV)",
    supports, workspace_bytes, forward, nullptr, nullptr,
    90, 90, "needs a Hopper GPU (sm_90a build): griddepcontrol",
};
