/* gpu.c: CUDA error reporting, device facts, and timing. It calls the CUDA runtime only: tensor.c
 * sits on top of it (cuda_ok), never the other way round. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "harness.h"

int cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 1;
    fprintf(stderr, "CUDA error in %s: %s (%s)\n", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return 0;
}

int gpu_available(char *why, size_t n)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, n, "no CUDA GPU usable here: cudaGetDeviceCount says \"%s\"%s", cudaGetErrorString(e),
                 e == cudaErrorInsufficientDriver ? " (no NVIDIA driver, or an old one)" : "");
        return 0;
    }
    if (count < 1) {
        snprintf(why, n, "no CUDA GPU found");
        return 0;
    }
    why[0] = 0;
    return 1;
}

void gpu_slug(const char *name, char *out, size_t n)
{
    /* Lower-case alphanumerics and dashes, vendor word dropped: "NVIDIA H200" -> "h200",
     * "NVIDIA GeForce RTX 4090" -> "geforce-rtx-4090". */
    const char *s = name;
    if (strncmp(s, "NVIDIA ", 7) == 0)
        s += 7;
    size_t j = 0;
    for (; *s && j + 1 < n; s++) {
        if (isalnum((unsigned char)*s))
            out[j++] = (char)tolower((unsigned char)*s);
        else if (j > 0 && out[j - 1] != '-')
            out[j++] = '-';
    }
    while (j > 0 && out[j - 1] == '-')
        j--;
    out[j] = 0;
    if (j == 0)
        snprintf(out, n, "gpu");
}

int gpu_query(gpu_info *g)
{
    struct cudaDeviceProp prop;
    memset(g, 0, sizeof *g);
    int dev = 0;
    if (!cuda_ok(cudaGetDevice(&dev), "cudaGetDevice") ||
        !cuda_ok(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties") ||
        !cuda_ok(cudaMemGetInfo(&g->free_mem, &g->total_mem), "cudaMemGetInfo"))
        return 0;
    snprintf(g->name, sizeof g->name, "%s", prop.name);
    gpu_slug(g->name, g->slug, sizeof g->slug);
    g->l2_bytes = prop.l2CacheSize;
    g->sms = prop.multiProcessorCount;
    g->cc_major = prop.major;
    g->cc_minor = prop.minor;
    cudaRuntimeGetVersion(&g->runtime_version);
    cudaDriverGetVersion(&g->driver_version);
    int khz = 0, bits = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess)
        g->hbm_peak_gbps = 2.0 * khz * 1e3 * (bits / 8) / 1e9;
    cudaGetLastError();   /* an attribute the driver does not report leaves no error behind */
    return 1;
}

int timer_init(gpu_timer *t, cudaStream_t stream)
{
    memset(t, 0, sizeof *t);
    t->stream = stream;
    gpu_info g;
    if (!gpu_query(&g))
        return 0;
    /* Twice the L2, rewritten before each timed launch, so no launch finds the previous
     * one's inputs still in cache. */
    t->flush_bytes = 2 * (size_t)(g.l2_bytes > 0 ? g.l2_bytes : 64 << 20);
    if (!cuda_ok(cudaMalloc(&t->flush, t->flush_bytes), "L2 flush buffer")) {
        t->flush = NULL;
        return 0;
    }
    if (!cuda_ok(cudaEventCreate(&t->start), "cudaEventCreate") ||
        !cuda_ok(cudaEventCreate(&t->stop), "cudaEventCreate")) {
        timer_free(t);
        return 0;
    }
    return 1;
}

void timer_free(gpu_timer *t)
{
    if (t->flush)
        cudaFree(t->flush);
    if (t->start)
        cudaEventDestroy(t->start);
    if (t->stop)
        cudaEventDestroy(t->stop);
    memset(t, 0, sizeof *t);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

attn_status timer_run(gpu_timer *t, launch_fn fn, void *ctx, int reps, timing *out)
{
    double *ms = malloc((size_t)reps * sizeof(double));
    if (!ms)
        return ATTN_ERR_NO_MEMORY;
    attn_status st = ATTN_OK;
    for (int r = 0; r < reps && st == ATTN_OK; r++) {
        float e = 0.f;
        if (!cuda_ok(cudaMemsetAsync(t->flush, r & 0xff, t->flush_bytes, t->stream), "L2 flush") ||
            !cuda_ok(cudaEventRecord(t->start, t->stream), "cudaEventRecord")) {
            st = ATTN_ERR_CUDA;
            break;
        }
        st = fn(ctx, t->stream);
        if (st != ATTN_OK)
            break;
        if (!cuda_ok(cudaEventRecord(t->stop, t->stream), "cudaEventRecord") ||
            !cuda_ok(cudaEventSynchronize(t->stop), "timed launch") ||
            !cuda_ok(cudaEventElapsedTime(&e, t->start, t->stop), "cudaEventElapsedTime"))
            st = ATTN_ERR_CUDA;
        ms[r] = e;
    }
    if (st == ATTN_OK) {
        qsort(ms, (size_t)reps, sizeof(double), cmp_double);
        out->reps = reps;
        out->min_ms = ms[0];
        out->max_ms = ms[reps - 1];
        out->median_ms = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    }
    free(ms);
    return st;
}

int timer_reps(double one_ms, double target_ms, int lo, int hi)
{
    double r = one_ms > 0 ? target_ms / one_ms : hi;
    if (!(r >= lo))
        return lo;
    return r > hi ? hi : (int)r;
}
