/* Step 00: materialized attention, the baseline.
 *
 * The idea: do exactly what the formula says. S = scale * Q K^T is written to device memory
 * (HBM) in full, a softmax kernel turns each row into P (and the row's lse), and O = P V.
 * Both products go to cuBLAS, so the matrix math is as fast as the GPU allows; what is slow
 * is the N x N traffic. The backward is the same story: dV = P^T dO, dP = dO V^T,
 * dS = P * (dP - rowsum(dO * O)), dQ = scale dS K, dK = scale dS^T Q, with P recomputed
 * from S and the saved lse.
 *
 * Why it is here: it is the reference for shapes too big for the CPU, and the number every
 * later step has to beat. Its workspace, B*H*Nq*Nk*(4 + sizeof(dtype)) bytes for S and P,
 * is O(N^2): at B=4, H=8, N=16384 in bf16 that is 48 GiB; at N=32768 192 GiB, more than
 * the H200 measured here holds (139.8 GiB). workspace_bytes() makes that cost a number the tools print.
 *
 * Precision: fp32 inputs use fp32 GEMMs (CUBLAS_COMPUTE_32F, no TF32). bf16 inputs use bf16
 * GEMMs with fp32 accumulation; S and the softmax are fp32, P and dS are stored in bf16
 * (the operand type of the next product), as PyTorch's math backend does.
 *
 * Limits: B*H*Nq below 2^31 (one softmax block per row), S at most 2^40 scores; head_dim up to
 * 65535. Grouped-query attention (H_kv < H) is taken: the g = H / H_kv query heads of a K/V head
 * are adjacent in memory, one matrix of g*Nq rows, so every product runs over B*H_kv batches of
 * g*Nq rows and dK, dV sum over the group inside the GEMM, in fp32 (g = 1: the same launches as
 * without it).
 * Run:  build/attn run --step 00 --shape 4,8,4096,4096,64 --dtype bf16 [--causal] [--backward]
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include "attention.h"

/* -------------------------------------------------------------------------------- kernels */

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

constexpr int kThreads = 256;

__device__ float block_reduce(float x, bool is_max)
{
    __shared__ float part[kThreads / 32];
    for (int off = 16; off > 0; off >>= 1) {
        float y = __shfl_xor_sync(0xffffffffu, x, off);
        x = is_max ? fmaxf(x, y) : x + y;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();                       /* part[] may still be read from the last call */
    if (lane == 0)
        part[warp] = x;
    __syncthreads();
    x = part[0];
    for (int w = 1; w < kThreads / 32; w++)
        x = is_max ? fmaxf(x, part[w]) : x + part[w];
    return x;
}

/* One block per row of S [B*H*Nq, Nk]: max, sum, then P = exp(S - lse) with the causal mask.
 * Row i sees keys j <= i (top-left), so every row has at least key 0 and l >= 1. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
softmax_rows(const float *S, T *P, float *lse, int Nq, int Nk, int causal)
{
    const size_t row = blockIdx.x;                       /* over B*H*Nq rows */
    const int i = (int)(row % Nq);
    const int visible = causal ? min(i + 1, Nk) : Nk;
    const float *s = S + row * Nk;
    T *p = P + row * Nk;

    float m = -INFINITY;
    for (int j = threadIdx.x; j < visible; j += kThreads)
        m = fmaxf(m, s[j]);
    m = block_reduce(m, true);
    float l = 0.f;
    for (int j = threadIdx.x; j < visible; j += kThreads)
        l += expf(s[j] - m);
    l = block_reduce(l, false);
    const float row_lse = m + logf(l);
    for (int j = threadIdx.x; j < Nk; j += kThreads)
        p[j] = from_float<T>(j < visible ? expf(s[j] - row_lse) : 0.f);
    if (threadIdx.x == 0)
        lse[row] = row_lse;
}

/* Backward: P = exp(S - lse) again, from the lse the forward saved. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
recompute_p(const float *S, const float *lse, T *P, int Nq, int Nk, int causal)
{
    const size_t row = blockIdx.x;
    const int i = (int)(row % Nq);
    const int visible = causal ? min(i + 1, Nk) : Nk;
    const float row_lse = lse[row];
    for (int j = threadIdx.x; j < Nk; j += kThreads)
        P[row * Nk + j] = from_float<T>(j < visible ? expf(S[row * Nk + j] - row_lse) : 0.f);
}

/* Di = rowsum(dO * O): one warp per row. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
rowsum_do_o(const T *dO, const T *O, float *Di, size_t rows, int D)
{
    const size_t row = (size_t)blockIdx.x * (kThreads / 32) + threadIdx.x / 32;
    if (row >= rows)
        return;
    float acc = 0.f;
    for (int e = threadIdx.x % 32; e < D; e += 32)
        acc += to_float(dO[row * D + e]) * to_float(O[row * D + e]);
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (threadIdx.x % 32 == 0)
        Di[row] = acc;
}

/* dS = P * (dP - Di), written over P (its last reader was dV = P^T dO). */
template <typename T>
__global__ void __launch_bounds__(kThreads)
softmax_grad(const float *dP, const float *Di, T *P_dS, int Nk)
{
    const size_t row = blockIdx.x;
    const float di = Di[row];
    for (int j = threadIdx.x; j < Nk; j += kThreads) {
        const size_t x = row * Nk + j;
        P_dS[x] = from_float<T>(to_float(P_dS[x]) * (dP[x] - di));
    }
}

/* ------------------------------------------------------------------------ launch wrapper */

/* cuBLAS wants a handle, one per device (a handle works on the device current when it was
 * made) and per host thread (it holds one stream and one workspace: two threads sharing one
 * could run each other's products on the wrong stream). Each is made on a thread's first call
 * on a device and kept for the thread's life. Its scratch space comes out of our workspace
 * (cublasSetWorkspace) so the step allocates nothing per call. */
static const int kMaxDevices = 64;
static thread_local cublasHandle_t handles[kMaxDevices];
static thread_local cublasHandle_t handle;   /* this call's: prepare() picks it */
static const size_t kCublasWorkspace = 32u << 20;

static bool fits_grid(const attn_problem *p)
{
    return (size_t)p->batch * p->heads * p->seq_q <= 0x7fffffffu;
}

static attn_status supports(const attn_problem *p, int backward, const char **why)
{
    (void)backward;
    attn_status s = attn_problem_valid_gqa(p, why);
    if (s != ATTN_OK)
        return s;
    if (!fits_grid(p) || p->head_dim > 65535) {
        *why = "B*H*Nq must be below 2^31 and head_dim at most 65535";
        return ATTN_ERR_UNSUPPORTED;
    }
    if ((double)p->batch * p->heads * p->seq_q * p->seq_k > (double)ATTN_MAX_ELEMENTS) {
        *why = "the scores S, B*H*Nq*Nk, above 2^40 elements (the contract's tensor bound; its "
               "workspace would be terabytes)";
        return ATTN_ERR_UNSUPPORTED;
    }
    *why = NULL;
    return ATTN_OK;
}

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* S (fp32) and P (dtype), then lse-sized Di and cuBLAS's scratch. */
static size_t workspace_bytes(const attn_problem *p, int backward)
{
    const size_t nn = (size_t)p->batch * p->heads * p->seq_q * p->seq_k;
    const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
    return align256(nn * 4) + align256(nn * attn_dtype_bytes(p->dtype)) +
           (backward ? align256(rows * 4) : 0) + kCublasWorkspace;
}

struct Layout {
    float *S;          /* [B*H, Nq, Nk] fp32 scores; dP in the backward */
    void *P;           /* [B*H, Nq, Nk] dtype probabilities; dS in the backward */
    float *Di;         /* [B*H, Nq] rowsum(dO * O) */
    void *cublas;
};

static Layout carve(const attn_problem *p, int backward, void *ws)
{
    const size_t nn = (size_t)p->batch * p->heads * p->seq_q * p->seq_k;
    const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
    char *c = (char *)ws;
    Layout l;
    l.S = (float *)c;
    c += align256(nn * 4);
    l.P = c;
    c += align256(nn * attn_dtype_bytes(p->dtype));
    l.Di = backward ? (float *)c : nullptr;
    c += backward ? align256(rows * 4) : 0;
    l.cublas = c;
    return l;
}

static attn_status prepare(cudaStream_t stream, void *cublas_ws)
{
    int dev;
    if (cudaGetDevice(&dev) != cudaSuccess)
        return ATTN_ERR_CUDA;
    if (dev >= kMaxDevices)
        return ATTN_ERR_UNSUPPORTED;
    if (!handles[dev] && cublasCreate(&handles[dev]) != CUBLAS_STATUS_SUCCESS)
        return ATTN_ERR_CUDA;
    handle = handles[dev];
    if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(handle, cublas_ws, kCublasWorkspace) != CUBLAS_STATUS_SUCCESS)
        return ATTN_ERR_CUDA;
    return ATTN_OK;
}

/* Row-major X[rows][cols] is column-major X^T, so each row-major product below is written as
 * the column-major product of the transposes (C^T = B^T A^T). Strides are per (b, h_kv): the
 * queries' side (Q, O, dO, dQ, S, P) of a batch is the Mq = g*Nq rows of its g query heads. */
static cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           float alpha, const void *A, cudaDataType at, int lda, long long sa,
                           const void *B, cudaDataType bt, int ldb, long long sb, float beta,
                           void *C, cudaDataType ct, int ldc, long long sc, int batch)
{
    return cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, &alpha, A, at, lda, sa, B, bt, ldb,
                                      sb, &beta, C, ct, ldc, sc, batch, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT);
}

#define CUBLAS_TRY(x) \
    do { if ((x) != CUBLAS_STATUS_SUCCESS) return ATTN_ERR_CUDA; } while (0)

template <typename T>
static attn_status forward_t(const attn_problem *p, const void *q, const void *k, const void *v,
                             void *o, float *lse, void *workspace, cudaStream_t stream)
{
    const int Nq = p->seq_q, Nk = p->seq_k, D = p->head_dim, BH = p->batch * p->heads;
    /* GQA: the g query heads of K/V head (b, h_kv) are heads b*H + h_kv*g .. + g-1, adjacent */
    const int Mq = p->heads / attn_heads_kv(p) * Nq, BKV = p->batch * attn_heads_kv(p);
    const cudaDataType t = p->dtype == ATTN_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    const Layout w = carve(p, 0, workspace);
    attn_status st = prepare(stream, w.cublas);
    if (st != ATTN_OK)
        return st;
    const long long sq = (long long)Mq * D, skv = (long long)Nk * D, ss = (long long)Mq * Nk;
    /* S[Mq][Nk] = scale * Q K^T   <=>   S^T (Nk x Mq) = K^T' Q^T' in column-major terms */
    CUBLAS_TRY(gemm(CUBLAS_OP_T, CUBLAS_OP_N, Nk, Mq, D, p->scale, k, t, D, skv, q, t, D, sq, 0.f,
                    w.S, CUDA_R_32F, Nk, ss, BKV));
    softmax_rows<T><<<(unsigned)((size_t)BH * Nq), kThreads, 0, stream>>>(
        w.S, (T *)w.P, lse, Nq, Nk, p->causal);
    if (cudaGetLastError() != cudaSuccess)
        return ATTN_ERR_CUDA;
    /* O[Mq][D] = P V   <=>   O^T (D x Mq) = V^T (D x Nk) P^T (Nk x Mq) */
    CUBLAS_TRY(gemm(CUBLAS_OP_N, CUBLAS_OP_N, D, Mq, Nk, 1.f, v, t, D, skv, w.P, t, Nk, ss, 0.f, o,
                    t, D, sq, BKV));
    return ATTN_OK;
}

template <typename T>
static attn_status backward_t(const attn_problem *p, const void *q, const void *k, const void *v,
                              const void *o, const float *lse, const void *d_o, void *dq,
                              void *dk, void *dv, void *workspace, cudaStream_t stream)
{
    const int Nq = p->seq_q, Nk = p->seq_k, D = p->head_dim, BH = p->batch * p->heads;
    /* GQA: the g query heads of K/V head (b, h_kv) are heads b*H + h_kv*g .. + g-1, adjacent */
    const int Mq = p->heads / attn_heads_kv(p) * Nq, BKV = p->batch * attn_heads_kv(p);
    const cudaDataType t = p->dtype == ATTN_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    const Layout w = carve(p, 1, workspace);
    attn_status st = prepare(stream, w.cublas);
    if (st != ATTN_OK)
        return st;
    const long long sq = (long long)Mq * D, skv = (long long)Nk * D, ss = (long long)Mq * Nk;
    const unsigned rows = (unsigned)((size_t)BH * Nq);
    /* S = scale Q K^T, then P = exp(S - lse) */
    CUBLAS_TRY(gemm(CUBLAS_OP_T, CUBLAS_OP_N, Nk, Mq, D, p->scale, k, t, D, skv, q, t, D, sq, 0.f,
                    w.S, CUDA_R_32F, Nk, ss, BKV));
    recompute_p<T><<<rows, kThreads, 0, stream>>>(w.S, lse, (T *)w.P, Nq, Nk, p->causal);
    /* dV[Nk][D] = P^T dO   <=>   dV^T (D x Nk) = dO^T (D x Mq) P (Mq x Nk) */
    CUBLAS_TRY(gemm(CUBLAS_OP_N, CUBLAS_OP_T, D, Nk, Mq, 1.f, d_o, t, D, sq, w.P, t, Nk, ss, 0.f,
                    dv, t, D, skv, BKV));
    /* dP[Mq][Nk] = dO V^T, into S's memory   <=>   dP^T (Nk x Mq) = V (Nk x D) dO^T (D x Mq) */
    CUBLAS_TRY(gemm(CUBLAS_OP_T, CUBLAS_OP_N, Nk, Mq, D, 1.f, v, t, D, skv, d_o, t, D, sq, 0.f,
                    w.S, CUDA_R_32F, Nk, ss, BKV));
    rowsum_do_o<T><<<(rows + kThreads / 32 - 1) / (kThreads / 32), kThreads, 0, stream>>>(
        (const T *)d_o, (const T *)o, w.Di, rows, D);
    softmax_grad<T><<<rows, kThreads, 0, stream>>>(w.S, w.Di, (T *)w.P, Nk);
    if (cudaGetLastError() != cudaSuccess)
        return ATTN_ERR_CUDA;
    /* dQ[Mq][D] = scale dS K   <=>   dQ^T (D x Mq) = K^T (D x Nk) dS^T (Nk x Mq) */
    CUBLAS_TRY(gemm(CUBLAS_OP_N, CUBLAS_OP_N, D, Mq, Nk, p->scale, k, t, D, skv, w.P, t, Nk, ss,
                    0.f, dq, t, D, sq, BKV));
    /* dK[Nk][D] = scale dS^T Q   <=>   dK^T (D x Nk) = Q^T (D x Mq) dS (Mq x Nk) */
    CUBLAS_TRY(gemm(CUBLAS_OP_N, CUBLAS_OP_T, D, Nk, Mq, p->scale, q, t, D, sq, w.P, t, Nk, ss,
                    0.f, dk, t, D, skv, BKV));
    return ATTN_OK;
}

static attn_status forward(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream)
{
    const char *why;
    attn_status s = supports(p, 0, &why);
    if (s != ATTN_OK)
        return s;
    if (!q || !k || !v || !o || !lse || !workspace)
        return ATTN_ERR_INVALID;
    /* the contract's alignment (attention.h): refused here, never a misaligned access */
    if (attn_misaligned(q, k, v, o, lse, NULL, NULL, NULL, NULL, workspace, workspace_bytes(p, 0)))
        return ATTN_ERR_INVALID;
    return p->dtype == ATTN_BF16
               ? forward_t<__nv_bfloat16>(p, q, k, v, o, lse, workspace, stream)
               : forward_t<float>(p, q, k, v, o, lse, workspace, stream);
}

static attn_status backward(const attn_problem *p, const void *q, const void *k, const void *v,
                            const void *o, const float *lse, const void *d_o, void *dq, void *dk,
                            void *dv, void *workspace, cudaStream_t stream)
{
    const char *why;
    attn_status s = supports(p, 1, &why);
    if (s != ATTN_OK)
        return s;
    if (!q || !k || !v || !o || !lse || !d_o || !dq || !dk || !dv || !workspace)
        return ATTN_ERR_INVALID;
    /* the contract's alignment (attention.h): refused here, never a misaligned access */
    if (attn_misaligned(q, k, v, o, lse, d_o, dq, dk, dv, workspace, workspace_bytes(p, 1)))
        return ATTN_ERR_INVALID;
    return p->dtype == ATTN_BF16
               ? backward_t<__nv_bfloat16>(p, q, k, v, o, lse, d_o, dq, dk, dv, workspace, stream)
               : backward_t<float>(p, q, k, v, o, lse, d_o, dq, dk, dv, workspace, stream);
}

extern "C" const attn_step attn_step_info = {
    "00_materialized",
    "S = QK^T and P = softmax(S) written to HBM, cuBLAS for the products; forward and backward",
    supports, workspace_bytes, forward, backward, nullptr,
    0, 0, nullptr,   /* any GPU: no compute-capability bounds */
};
