/* Step 01: online softmax on 16x16 tiles (FlashAttention's idea in its smallest form).
 *
 * The change against step 00: S and P are never stored. One thread block owns Br = 16 query
 * rows of one (batch, head) and streams K and V through shared memory in tiles of Bc = 16 keys.
 * Each row keeps a running max m_i, a running sum l_i (relative to m_i) and an unnormalised
 * accumulator acc; on every tile they are rescaled by exp(m_old - m_new), and acc is divided
 * by l_i once at the end. lse = m_i + log(l_i) is written for the backward.
 *
 * Why: the N x N traffic of step 00 is gone (workspace 0 bytes, memory O(N)); every score is
 * computed once and used at once. Prediction: O(N) in memory, but slow, and wrong where Nk % 16 != 0 (the bug below): fp32 math
 * on CUDA cores, and each 16-key tile of K and V (2 * 16 * D values) is loaded for only 16
 * query rows, so every K/V element loaded feeds just 2 * 16 FLOPs of each product.
 *
 * Known bug, kept on purpose (the starter code's ragged-tile bug): keys past Nk in the last tile are loaded as
 * zeros and are NOT masked. A zero key scores 0, not -inf, so the padded keys leak
 * exp(0 - m) each into l_i and the output is wrong whenever Nk % 16 != 0 (and some row can
 * see the padding: always without causal; with causal, only rows i >= Nk). Fixed in step 02.
 *
 * Layout: 256 threads = 16 rows x 16 columns. Thread (ty, tx) computes S[ty][tx] for the tile,
 * and owns output features tx, tx + 16, ... of row ty. fp32 math throughout (fp32 or bf16
 * inputs); D up to 128, padded in shared memory to DP = max(16, next power of two), the
 * padded features zero. Causal by masking (every tile is still computed; step 05 skips).
 *
 * Run:  build/attn run --step 01 --shape 1,1,1024,4096,64
 *       build/attn check --step 01      (its XFAIL rows are the bug)
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include "attention.h"

constexpr int Br = 16;   /* query rows per block */
constexpr int Bc = 16;   /* keys per tile */

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

/* grid: (ceil(Nq / Br), B*H); block: Br * Bc threads. Q, K, V, O: [B, H, N, D]; lse: [B, H, Nq] */
template <typename T, int DP>
__global__ void __launch_bounds__(Br * Bc)
attention_fwd(const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V,
              T *__restrict__ O, float *__restrict__ lse, int Nq, int Nk, int D, float scale,
              int causal)
{
    /* +1 pads each row so that the 16 threads reading K[tx][d] hit 16 different banks. */
    __shared__ float Qs[Br][DP + 1];
    __shared__ float Ks[Bc][DP + 1];
    __shared__ float Vs[Bc][DP + 1];
    __shared__ float Ps[Br][Bc + 1];

    const int tx = threadIdx.x % Bc, ty = threadIdx.x / Bc;
    const size_t bh = blockIdx.y;
    const int q0 = blockIdx.x * Br, row = q0 + ty;
    Q += bh * Nq * D;
    K += bh * Nk * D;
    V += bh * Nk * D;

    for (int x = threadIdx.x; x < Br * DP; x += Br * Bc) {
        const int r = x / DP, d = x % DP;
        Qs[r][d] = (q0 + r < Nq && d < D) ? to_float(Q[(size_t)(q0 + r) * D + d]) : 0.f;
    }

    float m_i = -INFINITY, l_i = 0.f;   /* running max and sum of row `row` */
    float acc[DP / Bc];                 /* acc[c] is feature tx + c * Bc of row `row` */
    for (int c = 0; c < DP / Bc; c++)
        acc[c] = 0.f;

    for (int k0 = 0; k0 < Nk; k0 += Bc) {
        __syncthreads();                /* everyone is done with the previous tile */
        for (int x = threadIdx.x; x < Bc * DP; x += Br * Bc) {
            const int r = x / DP, d = x % DP;
            const bool in = k0 + r < Nk && d < D;   /* rows past Nk are loaded as zeros */
            Ks[r][d] = in ? to_float(K[(size_t)(k0 + r) * D + d]) : 0.f;
            Vs[r][d] = in ? to_float(V[(size_t)(k0 + r) * D + d]) : 0.f;
        }
        __syncthreads();

        /* S[ty][tx] = scale * q_row . k_col */
        float s = 0.f;
        for (int d = 0; d < DP; d++)
            s += Qs[ty][d] * Ks[tx][d];
        s *= scale;
        const int col = k0 + tx;
        if (causal && col > row)        /* THE BUG: a padded key (col >= Nk) keeps s = 0 */
            s = -INFINITY;

        /* Row max over the tile: the 16 threads of a row are one half-warp. */
        float m_tile = s;
        for (int off = Bc / 2; off > 0; off >>= 1)
            m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, off));
        const float m_new = fmaxf(m_i, m_tile);
        /* m_new is finite: key 0, in the first tile, is visible to every row. The guard keeps a
         * fully masked row (-inf - -inf = NaN) out of the arithmetic all the same. */
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        const float p = expf(s - m_use);
        const float alpha = expf(m_i - m_use);   /* 0 on the first tile: m_i = -inf */
        float l_tile = p;
        for (int off = Bc / 2; off > 0; off >>= 1)
            l_tile += __shfl_xor_sync(0xffffffffu, l_tile, off);
        l_i = l_i * alpha + l_tile;
        m_i = m_new;
        Ps[ty][tx] = p;
        __syncthreads();

        /* acc = acc * alpha + P V for this thread's features */
        for (int c = 0; c < DP / Bc; c++) {
            float pv = 0.f;
            for (int j = 0; j < Bc; j++)
                pv += Ps[ty][j] * Vs[j][tx + c * Bc];
            acc[c] = acc[c] * alpha + pv;
        }
    }

    if (row < Nq) {
        for (int c = 0; c < DP / Bc; c++) {
            const int d = tx + c * Bc;
            if (d < D)
                O[(bh * Nq + row) * D + d] = from_float<T>(acc[c] / l_i);
        }
        if (tx == 0)
            lse[bh * Nq + row] = m_i + logf(l_i);
    }
}

/* ------------------------------------------------------------------------ launch wrapper */

static attn_status supports(const attn_problem *p, int backward, const char **why)
{
    attn_status s = attn_problem_valid(p, why);
    if (s != ATTN_OK)
        return s;
    if (backward) {
        *why = "forward only (the tiled backward is step 06)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (p->head_dim > 128) {
        *why = "head_dim above 128 (shared-memory tiles are sized for D <= 128)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if ((size_t)p->batch * p->heads > 65535) {
        *why = "B*H above 65535 (the grid's y dimension)";
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

template <typename T, int DP>
static void launch(const attn_problem *p, const void *q, const void *k, const void *v, void *o,
                   float *lse, cudaStream_t stream)
{
    dim3 grid((p->seq_q + Br - 1) / Br, p->batch * p->heads);
    attention_fwd<T, DP><<<grid, Br * Bc, 0, stream>>>(
        (const T *)q, (const T *)k, (const T *)v, (T *)o, lse, p->seq_q, p->seq_k, p->head_dim,
        p->scale, p->causal);
}

template <typename T>
static void dispatch(const attn_problem *p, const void *q, const void *k, const void *v, void *o,
                     float *lse, cudaStream_t stream)
{
    if (p->head_dim <= 16)
        launch<T, 16>(p, q, k, v, o, lse, stream);
    else if (p->head_dim <= 32)
        launch<T, 32>(p, q, k, v, o, lse, stream);
    else if (p->head_dim <= 64)
        launch<T, 64>(p, q, k, v, o, lse, stream);
    else
        launch<T, 128>(p, q, k, v, o, lse, stream);
}

static attn_status forward(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream)
{
    const char *why;
    attn_status s = supports(p, 0, &why);
    if (s != ATTN_OK)
        return s;
    if (!q || !k || !v || !o || !lse)
        return ATTN_ERR_INVALID;
    /* the contract's alignment (attention.h): refused here, never a misaligned access */
    if (attn_misaligned(q, k, v, o, lse, NULL, NULL, NULL, NULL, workspace, workspace_bytes(p, 0)))
        return ATTN_ERR_INVALID;
    if (p->dtype == ATTN_BF16)
        dispatch<__nv_bfloat16>(p, q, k, v, o, lse, stream);
    else
        dispatch<float>(p, q, k, v, o, lse, stream);
    return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
}

/* Nk % 16 != 0 puts zero keys in the last tile; a row sees them unless causal hides them. */
static const char *known_bug(const attn_problem *p)
{
    if (p->seq_k % Bc != 0 && (!p->causal || p->seq_q > p->seq_k))
        return "padded keys past Nk score 0 and leak into the softmax (Nk % 16 != 0; fixed in 02)";
    return NULL;
}

extern "C" const attn_step attn_step_info = {
    "01_online_softmax_16x16",
    "online softmax over 16x16 tiles, S never stored; keeps the starter code's ragged-tile bug: wrong when Nk % 16 != 0",
    supports, workspace_bytes, forward, nullptr, known_bug,
    0, 0, nullptr,   /* any GPU: no compute-capability bounds */
};
