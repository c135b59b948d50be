/* step.cuh: glue that the tensor-core steps (03 on) share, and nothing else.
 *
 * Only plumbing lives here: checks every step starts with, the device query for steps that need a
 * particular GPU, and the way to reach the CUDA driver API without linking -lcuda. Kernels, tile
 * sizes and each step's limits stay in the step file, which still reads top to bottom. Steps
 * 00-02 predate this header and carry their own copies (they are the baseline; see README).
 */
#ifndef ATTN_STEP_CUH
#define ATTN_STEP_CUH

#include <cuda_runtime.h>
#include "attention.h"

/* The prologue of forward(): the problem is valid and supported, and no pointer is NULL. */
static inline attn_status step_check_forward(attn_status (*supports)(const attn_problem *, int,
                                                                     const char **),
                                             const attn_problem *p, const void *q, const void *k,
                                             const void *v, const void *o, const float *lse)
{
    const char *why;
    attn_status s = supports(p, 0, &why);
    if (s != ATTN_OK)
        return s;
    return q && k && v && o && lse ? ATTN_OK : ATTN_ERR_INVALID;
}

/* The same for backward(). */
static inline attn_status step_check_backward(attn_status (*supports)(const attn_problem *, int,
                                                                      const char **),
                                              const attn_problem *p, const void *q, const void *k,
                                              const void *v, const void *o, const float *lse,
                                              const void *d_o, const void *dq, const void *dk,
                                              const void *dv)
{
    const char *why;
    attn_status s = supports(p, 1, &why);
    if (s != ATTN_OK)
        return s;
    return q && k && v && o && lse && d_o && dq && dk && dv ? ATTN_OK : ATTN_ERR_INVALID;
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
 * machine with no driver (CI), and the lookup fails cleanly (NULL) only when it is called there.
 *     typedef CUresult (*encode_fn)(CUtensorMap *, ...);   // from <cudaTypedefs.h>
 *     encode_fn f = (encode_fn)step_driver_fn("cuTensorMapEncodeTiled", 12000);
 *     if (!f) return ATTN_ERR_CUDA;
 * cuda_version is the driver API version whose signature the caller expects (12000 = 12.0). */
static inline void *step_driver_fn(const char *symbol, unsigned int cuda_version)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion(symbol, &fn, cuda_version, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return fn;
}

#endif
