/* step.cuh: glue that the tensor-core steps (03 on) share, and nothing else.
 *
 * Only plumbing lives here: checks every step starts with, the device query for steps that need a
 * particular GPU, and the way to reach the CUDA driver API without linking -lcuda. Kernels, tile
 * sizes and each step's limits stay in the step file, which still reads top to bottom. Steps
 * 00-02 predate this header and carry their own copies (they are the baseline; see README).
 */
#ifndef ATTN_STEP_CUH
#define ATTN_STEP_CUH

#include <stdio.h>
#include <cuda_runtime.h>
#include "attention.h"

typedef attn_status (*step_supports_fn)(const attn_problem *, int, const char **);
typedef size_t (*step_workspace_fn)(const attn_problem *, int);

/* The prologue of forward(): the problem is valid and supported, no pointer is NULL (nor the
 * workspace, when the step asks for one), and every pointer is aligned as attention.h says
 * (attn_misaligned). All of it is decided on the host, before any CUDA call, so a malformed
 * call is ATTN_ERR_INVALID and never a misaligned access or a sticky CUDA error. */
static inline attn_status step_check_forward(step_supports_fn supports,
                                             step_workspace_fn workspace_bytes,
                                             const attn_problem *p, const void *q, const void *k,
                                             const void *v, const void *o, const float *lse,
                                             const void *workspace)
{
    const char *why;
    attn_status s = supports(p, 0, &why);
    if (s != ATTN_OK)
        return s;
    const size_t ws = workspace_bytes(p, 0);
    if (!q || !k || !v || !o || !lse || (ws && !workspace))
        return ATTN_ERR_INVALID;
    return attn_misaligned(q, k, v, o, lse, NULL, NULL, NULL, NULL, workspace, ws)
               ? ATTN_ERR_INVALID
               : ATTN_OK;
}

/* The same for backward(). */
static inline attn_status step_check_backward(step_supports_fn supports,
                                              step_workspace_fn workspace_bytes,
                                              const attn_problem *p, const void *q, const void *k,
                                              const void *v, const void *o, const float *lse,
                                              const void *d_o, const void *dq, const void *dk,
                                              const void *dv, const void *workspace)
{
    const char *why;
    attn_status s = supports(p, 1, &why);
    if (s != ATTN_OK)
        return s;
    const size_t ws = workspace_bytes(p, 1);
    if (!q || !k || !v || !o || !lse || !d_o || !dq || !dk || !dv || (ws && !workspace))
        return ATTN_ERR_INVALID;
    return attn_misaligned(q, k, v, o, lse, d_o, dq, dk, dv, workspace, ws) ? ATTN_ERR_INVALID
                                                                           : ATTN_OK;
}

/* The current device's compute capability as major*10 + minor, or 0 if there is none. */
static inline int step_device_cc(void)
{
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        cudaGetLastError();   /* clear the sticky-free error of a failed query */
        return 0;
    }
    return major * 10 + minor;
}

/* How a step reaches a CUDA driver API function (say cuTensorMapEncodeTiled, for TMA) without
 * linking -lcuda: ask the runtime for the entry point at run time. The .so then loads on a
 * machine with no driver (CI), and the lookup fails cleanly only when it is called there.
 *     static void *encode_cache;   // one per function the step uses
 *     typedef CUresult (*encode_fn)(CUtensorMap *, ...);   // from <cudaTypedefs.h>
 *     encode_fn f = (encode_fn)step_driver_fn(&encode_cache, "cuTensorMapEncodeTiled", 12000);
 *     if (!f) return ATTN_ERR_CUDA;
 * cuda_version is the driver API version whose signature the caller expects (12000 = 12.0).
 * A found entry point is kept in *cache for the process's life; a failed lookup is not: it says
 * why on stderr, returns NULL, and the next call asks again (a driver loaded later, a transient
 * failure), so every call that cannot proceed says so. */
static inline void *step_driver_fn(void **cache, const char *symbol, unsigned int cuda_version)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (fn)
        return fn;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion(symbol, &fn, cuda_version, cudaEnableDefault, &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) {
        cudaGetLastError();
        fprintf(stderr, "attn step: the CUDA driver function %s (API %u) is unavailable: %s\n",
                symbol, cuda_version,
                e != cudaSuccess ? cudaGetErrorString(e)
                : found == cudaDriverEntryPointVersionNotSufficent
                    ? "the driver is older than that API version"
                    : "the driver does not export it");
        return NULL;
    }
    __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
    return fn;
}

#endif
