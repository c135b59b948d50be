/* attention.h: the contract every step exports (README.md, "The contract", tells the story).
 *
 * Each steps/NN_name/attention.cu builds to build/steps/NN_name.so, which exports
 *     extern "C" const attn_step attn_step_info;
 * The harness (common/), the tests and the benchmark only ever talk to a step through it.
 *
 * Tensors are device pointers, contiguous [B, H, N, D] row-major (torch SDPA's layout), each
 * 16-byte aligned (ATTN_ALIGN). Grouped-query attention: K, V, dK and dV have H_kv heads
 * (attn_heads_kv, below; [B, H_kv, Nk, D]), and query head h reads K/V head h / (H / H_kv); dK and
 * dV of a K/V head sum over the H / H_kv query heads that read it. H_kv = H is ordinary
 * multi-head attention, H_kv = 1 multi-query attention. The kernels move 16 bytes per access (cp.async, TMA, vector
 * stores), and a misaligned one is a sticky CUDA error that ends the caller's process, so every
 * step checks its pointers first (attn_misaligned, below) and refuses a misaligned one with
 * ATTN_ERR_INVALID. A view that starts inside a buffer (PyTorch's buf[1:]) is the usual way to
 * get one; cudaMalloc and torch's allocator return at least 256-byte aligned memory.
 * lse is float32 [B, H, Nq]: the natural-log logsumexp of each row's scaled, masked scores.
 * Causal is top-left: query i sees key j iff j <= i (torch SDPA is_causal). Every row therefore
 * sees key 0, so no row is ever fully masked.
 * Calls are asynchronous on `stream`; the caller allocates workspace_bytes() of device memory,
 * and a step allocates nothing itself. The workspace is UNDEFINED on entry (the checks fill it
 * with NaN before every call: a step that needs zeros writes them itself) and must be aligned to
 * 256 bytes (ATTN_WORKSPACE_ALIGN, cudaMalloc's alignment) when workspace_bytes() is not 0.
 *
 * Which GPUs a step runs on: cc_min and cc_max bound the compute capability (major*10 + minor,
 * 0 = no bound), and gpu_why says what the step needs ("needs a Hopper GPU (sm_90a): wgmma").
 * The tools test this (attn_gpu_fits) before supports(), so on another GPU every tool reports
 * SKIP with gpu_why, and `attn list` prints the requirement without a GPU. A step whose code
 * needs a given GPU also checks it in forward/backward itself (common/step.cuh:
 * step_device_cc), so a direct C caller gets ATTN_ERR_UNSUPPORTED, never a launch failure.
 */
#ifndef ATTENTION_H
#define ATTENTION_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ATTN_FP32 = 0, ATTN_BF16 = 1 } attn_dtype;

typedef struct {
    int batch, heads;   /* B, H */
    int seq_q, seq_k;   /* Nq, Nk >= 1, any value up to ATTN_MAX_SEQ (no multiple-of-tile
                           assumption) */
    int head_dim;       /* D */
    int causal;         /* 1: query i sees key j iff j <= i (top-left, like torch SDPA is_causal) */
    attn_dtype dtype;   /* of Q, K, V, O, dO, dQ, dK, dV */
    float scale;        /* softmax scale, normally 1/sqrt(D); scale * log2(e) finite in fp32, and
                           the scaled scores too (inputs whose scale * q.k overflows fp32 have no
                           fp32 lse: outside the contract) */
    int heads_kv;       /* H_kv, the K/V heads: >= 1 and dividing H (grouped-query attention), or 0,
                           which means H: an initializer that stops before it is multi-head */
    int deterministic;  /* 1: the backward must give bitwise the same dQ, dK, dV on every call with
                           the same inputs (sums in a fixed order); a step whose backward cannot
                           refuses it (ATTN_ERR_UNSUPPORTED). 0: any order. Forwards are always
                           repeatable. */
} attn_problem;

/* The contract's size bounds, far past any GPU's memory, so that no step's or tool's arithmetic
 * wraps: a row or key index plus a tile fits an int, and a tensor's bytes (and a sum of a few
 * tensors' bytes) fit a size_t. */
#define ATTN_MAX_SEQ (1 << 30)                 /* Nq and Nk */
#define ATTN_MAX_ELEMENTS (1ull << 40)         /* of Q, K, V and the outputs, each */

/* H_kv of p: heads_kv, or H where it is 0. */
static inline int attn_heads_kv(const attn_problem *p)
{
    return p->heads_kv ? p->heads_kv : p->heads;
}

typedef enum {
    ATTN_OK = 0,
    ATTN_ERR_INVALID,      /* malformed call: sizes < 1 or past the bounds above, NaN/Inf scale,
                              NULL or misaligned pointers */
    ATTN_ERR_UNSUPPORTED,  /* valid, but this step cannot do it (dtype, head dim); *why says */
    ATTN_ERR_NO_MEMORY,
    ATTN_ERR_CUDA          /* a CUDA or cuBLAS call failed */
} attn_status;

typedef struct {
    const char *name;     /* the folder name, e.g. "02_ragged_mask" */
    const char *summary;  /* one line: the idea this step adds */
    attn_status (*supports)(const attn_problem *p, int backward, const char **why);
    size_t (*workspace_bytes)(const attn_problem *p, int backward);
    attn_status (*forward)(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream);
    attn_status (*backward)(const attn_problem *p, const void *q, const void *k, const void *v,
                            const void *o, const float *lse, const void *d_o,
                            void *dq, void *dk, void *dv, void *workspace, cudaStream_t stream);
    /* backward is NULL for forward-only steps.
     * known_bug: NULL, or a function that returns a reason string when this step is known to give
     * a wrong answer on p, kept on purpose for the lesson (step 01), else NULL. The harness then
     * expects a failure (XFAIL) instead of a pass. */
    const char *(*known_bug)(const attn_problem *p);
    int cc_min, cc_max;    /* compute capability bounds, major*10+minor; 0 = none (see above) */
    const char *gpu_why;   /* what the step needs from the GPU, or NULL */
} attn_step;

/* 1 if the step's code can run on a GPU of compute capability cc (major*10+minor); else 0 and
 * *why names what it needs. */
static inline int attn_gpu_fits(const attn_step *s, int cc, const char **why)
{
    const int ok = (!s->cc_min || cc >= s->cc_min) && (!s->cc_max || cc <= s->cc_max);
    if (why)
        *why = ok ? NULL : (s->gpu_why ? s->gpu_why : "not built for this GPU");
    return ok;
}

/* The checks every step starts with, shared so that "malformed" means the same everywhere: a
 * well-formed problem, grouped-query attention allowed (for a step that reads K/V head
 * h / (H / H_kv)). */
static inline attn_status attn_problem_valid_gqa(const attn_problem *p, const char **why)
{
    const char *w = NULL;
    if (!p)
        w = "problem is NULL";
    else if (p->batch < 1 || p->heads < 1 || p->seq_q < 1 || p->seq_k < 1 || p->head_dim < 1)
        w = "batch, heads, seq_q, seq_k and head_dim must all be >= 1";
    else if (p->seq_q > ATTN_MAX_SEQ || p->seq_k > ATTN_MAX_SEQ)
        w = "seq_q and seq_k must be at most 2^30 (the contract's bound: indices stay in an int)";
    else if (p->heads_kv < 0)
        w = "heads_kv must be >= 1 (or 0: as many as heads)";
    else if (p->heads % attn_heads_kv(p) != 0)
        w = "heads must be a multiple of heads_kv (each K/V head serves heads / heads_kv query heads)";
    else if ((double)p->batch * p->heads * p->seq_q * p->head_dim > (double)ATTN_MAX_ELEMENTS ||
             (double)p->batch * attn_heads_kv(p) * p->seq_k * p->head_dim >
                 (double)ATTN_MAX_ELEMENTS)
        w = "a tensor above 2^40 elements (the contract's bound: byte counts stay in a size_t)";
    else if (p->causal != 0 && p->causal != 1)
        w = "causal must be 0 or 1";
    else if (p->deterministic != 0 && p->deterministic != 1)
        w = "deterministic must be 0 or 1";
    else if (p->dtype != ATTN_FP32 && p->dtype != ATTN_BF16)
        w = "dtype must be ATTN_FP32 or ATTN_BF16";
    else if (!isfinite(p->scale * 1.44269504f))
        w = "scale must be finite, and so must scale * log2(e) (|scale| < 2.3e38): the steps from "
            "04 fold log2(e) into the scale";
    if (why)
        *why = w;
    return w ? ATTN_ERR_INVALID : ATTN_OK;
}

/* The same for a step that reads one K/V head per query head: grouped-query attention (H_kv < H)
 * is valid, but not for this step (ATTN_ERR_UNSUPPORTED, and why). */
static inline attn_status attn_problem_valid(const attn_problem *p, const char **why)
{
    const attn_status s = attn_problem_valid_gqa(p, why);
    if (s != ATTN_OK)
        return s;
    if (attn_heads_kv(p) != p->heads) {
        if (why)
            *why = "grouped-query attention (heads_kv < heads): this step reads one K/V head per "
                   "query head";
        return ATTN_ERR_UNSUPPORTED;
    }
    return ATTN_OK;
}

/* The pointer rule of the contract (above). */
#define ATTN_ALIGN 16             /* every tensor: q, k, v, o, lse, d_o, dq, dk, dv */
#define ATTN_WORKSPACE_ALIGN 256  /* the workspace, when workspace_bytes() is not 0 */

/* NULL when a call's pointers keep the rule; else why not, naming the first that breaks it
 * ("o is not 16-byte aligned ..."), so that every step, tool and test says the same thing.
 * NULL pointers pass here (a forward passes NULL for d_o, dq, dk, dv); whether a NULL is allowed
 * is the caller's check. workspace_bytes is what the step's workspace_bytes() asks for: at 0 the
 * workspace pointer is not looked at. */
static inline const char *attn_misaligned(const void *q, const void *k, const void *v,
                                          const void *o, const float *lse, const void *d_o,
                                          const void *dq, const void *dk, const void *dv,
                                          const void *workspace, size_t workspace_bytes)
{
    const void *const t[9] = {q, k, v, o, lse, d_o, dq, dk, dv};
    static const char *const why[9] = {
        "q is not 16-byte aligned (every tensor pointer must be)",
        "k is not 16-byte aligned (every tensor pointer must be)",
        "v is not 16-byte aligned (every tensor pointer must be)",
        "o is not 16-byte aligned (every tensor pointer must be)",
        "lse is not 16-byte aligned (every tensor pointer must be)",
        "d_o is not 16-byte aligned (every tensor pointer must be)",
        "dq is not 16-byte aligned (every tensor pointer must be)",
        "dk is not 16-byte aligned (every tensor pointer must be)",
        "dv is not 16-byte aligned (every tensor pointer must be)"};
    for (int i = 0; i < 9; i++)
        if ((uintptr_t)t[i] % ATTN_ALIGN)
            return why[i];
    if (workspace_bytes && (uintptr_t)workspace % ATTN_WORKSPACE_ALIGN)
        return "workspace is not 256-byte aligned (cudaMalloc's alignment)";
    return NULL;
}

static inline size_t attn_dtype_bytes(attn_dtype t) { return t == ATTN_BF16 ? 2 : 4; }

#ifdef __cplusplus
}
#endif
#endif
