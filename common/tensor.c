/* tensor.c: bf16 conversion, seeded random inputs, device buffers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "harness.h"

uint16_t attn_f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)            /* NaN: keep it NaN (set a mantissa bit) */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);                 /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float attn_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

const char *input_mode_name(input_mode m)
{
    switch (m) {
    case INPUT_NORMAL: return "normal";
    case INPUT_LARGE: return "large";
    case INPUT_LATE: return "late";
    case INPUT_FAR: return "far";
    }
    return "?";
}

/* splitmix64: small, seedable, good enough for test data. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double next_unit(uint64_t *s) /* (0, 1) */
{
    return ((double)(next_u64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static void fill_normal(float *x, size_t n, uint64_t seed, double mean, double sd)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i += 2) {   /* Box-Muller, two values per draw */
        double r = sqrt(-2.0 * log(next_unit(&s))), a = 2.0 * M_PI * next_unit(&s);
        x[i] = (float)(mean + sd * r * cos(a));
        if (i + 1 < n)
            x[i + 1] = (float)(mean + sd * r * sin(a));
    }
}

static void fill_uniform(float *x, size_t n, uint64_t seed, float mean)
{
    uint64_t s = seed;
    const float k = 1.7320508f / 2147483648.0f;   /* uniform on [-sqrt3, sqrt3): variance 1 */
    for (size_t i = 0; i < n; i++)
        x[i] = mean + k * (float)(int32_t)(uint32_t)(next_u64(&s) >> 32);
}

void round_to_dtype(float *x, size_t n, attn_dtype t)
{
    if (t == ATTN_BF16)
        for (size_t i = 0; i < n; i++)
            x[i] = attn_bf16_to_f32(attn_f32_to_bf16(x[i]));
}

static int inputs_alloc(host_inputs *in, const attn_problem *p)
{
    memset(in, 0, sizeof *in);
    in->p = *p;
    size_t bh = (size_t)p->batch * p->heads, bkv = (size_t)p->batch * attn_heads_kv(p);
    in->n_q = bh * p->seq_q * p->head_dim;
    in->n_kv = bkv * p->seq_k * p->head_dim;
    in->n_lse = bh * p->seq_q;
    in->q = malloc(in->n_q * sizeof(float));
    in->k = malloc(in->n_kv * sizeof(float));
    in->v = malloc(in->n_kv * sizeof(float));
    in->d_o = malloc(in->n_q * sizeof(float));
    if (!in->q || !in->k || !in->v || !in->d_o) {
        inputs_free(in);
        fprintf(stderr, "out of host memory for the inputs\n");
        return 0;
    }
    return 1;
}

static void inputs_round(host_inputs *in)
{
    round_to_dtype(in->q, in->n_q, in->p.dtype);
    round_to_dtype(in->k, in->n_kv, in->p.dtype);
    round_to_dtype(in->v, in->n_kv, in->p.dtype);
    round_to_dtype(in->d_o, in->n_q, in->p.dtype);
}

/* FAR: every key is the common vector -A (all features) plus noise, and query row i is c_i (all
 * features) plus noise, so row i's scores all sit near mu_i = -A c_i D scale: c_i is chosen so that
 * |mu_i| runs from 100 to 200 over a head's rows, below zero on even rows and above on odd ones
 * (lse from about -200 to +200). The keys' noise sets the spread of a row's scores around mu_i
 * (scale |c_i| sd sqrt(D), about 2 at |mu_i| = 150), so the softmax is neither one-hot nor flat.
 * A key scored 0 instead of masked (a padded key past Nk) weighs exp(0 - lse) against these: e^200
 * on the rows below zero, which overflows fp32. The constant part of K cancels in dQ_i = scale
 * sum_j dS_ij k_j (sum_j dS_ij = 0), so dQ is ill-conditioned here for every implementation:
 * check.c's gradient floor models what rounding dS to bf16 costs on these very inputs. */
static void far_from_zero(host_inputs *in, uint64_t seed)
{
    const attn_problem *p = &in->p;
    const int nq = p->seq_q, nk = p->seq_k, d = p->head_dim;
    const double A = 4.0, ds = fabs((double)p->scale) * d;   /* mu = -A c ds */
    const double sd_k = ds > 0 ? 2.0 * A * sqrt((double)d) / 150.0 : 0.1;
    uint64_t s = seed ^ 0x5555;
    const size_t h = (size_t)p->heads, group = h / (size_t)attn_heads_kv(p);
    for (size_t bh = 0; bh < (size_t)p->batch * p->heads; bh++) {
        /* K/V head bh / H * H_kv + bh % H / group, filled by the first query head that reads it
         * (every head when H_kv = H) */
        for (int j = 0; bh % h % group == 0 && j < nk; j++) {
            float *row = in->k + ((bh / h * (h / group) + bh % h / group) * nk + j) * d;
            for (int e = 0; e < d; e++)
                row[e] = (float)(-A + sd_k * (2.0 * next_unit(&s) - 1.0) * 1.7320508);
        }
        for (int i = 0; i < nq; i++) {
            const double mu = 100.0 + 100.0 * next_unit(&s);   /* |mu_i| */
            const double c = ds > 0 ? (i % 2 ? -mu : mu) / (A * ds) : 1.0;
            float *row = in->q + (bh * nq + i) * d;
            for (int e = 0; e < d; e++)
                row[e] = (float)(c + 0.02 * fabs(c) * (2.0 * next_unit(&s) - 1.0) * 1.7320508);
        }
    }
}

int inputs_make(host_inputs *in, const attn_problem *p, input_mode mode, uint64_t seed)
{
    if (!inputs_alloc(in, p))
        return 0;
    /* Offsets keep every mean away from zero, so a kernel that drops a term or writes
     * zeros cannot hide behind outputs that average out. */
    double qk_sd = 1.0;
    if (mode == INPUT_LARGE) {
        /* score = scale * q.k with scale = 1/sqrt(D) has variance sd^4: sd^2 = 12.5 puts
         * the largest of many scores near +-50. */
        qk_sd = sqrt(12.5);
    }
    fill_normal(in->q, in->n_q, seed ^ 0x1111, mode == INPUT_LATE ? 1.0 : 0.1, qk_sd);
    fill_normal(in->k, in->n_kv, seed ^ 0x2222, -0.05, qk_sd);
    fill_normal(in->v, in->n_kv, seed ^ 0x3333, 0.5, 1.0);
    fill_normal(in->d_o, in->n_q, seed ^ 0x4444, 0.25, 1.0);
    if (mode == INPUT_LATE) {
        /* q has mean 1, so adding c to every feature of key j adds about c*sqrt(D) to its
         * scaled score: a ramp over all keys plus a bump on the last 16. */
        const int nk = p->seq_k, d = p->head_dim;
        for (size_t kvh = 0; kvh < (size_t)p->batch * attn_heads_kv(p); kvh++)
            for (int j = 0; j < nk; j++) {
                float c = 1.5f * (float)(j + 1) / (float)nk + (j >= nk - 16 ? 1.5f : 0.0f);
                float *row = in->k + (kvh * nk + j) * d;
                for (int e = 0; e < d; e++)
                    row[e] += c;
            }
    }
    if (mode == INPUT_FAR)
        far_from_zero(in, seed);
    inputs_round(in);
    return 1;
}

int inputs_make_fast(host_inputs *in, const attn_problem *p, uint64_t seed)
{
    if (!inputs_alloc(in, p))
        return 0;
    fill_uniform(in->q, in->n_q, seed ^ 0x1111, 0.1f);
    fill_uniform(in->k, in->n_kv, seed ^ 0x2222, -0.05f);
    fill_uniform(in->v, in->n_kv, seed ^ 0x3333, 0.5f);
    fill_uniform(in->d_o, in->n_q, seed ^ 0x4444, 0.25f);
    inputs_round(in);
    return 1;
}

void inputs_free(host_inputs *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->d_o);
    in->q = in->k = in->v = in->d_o = NULL;
}

int dev_alloc(void **ptr, size_t bytes, const char *what)
{
    *ptr = NULL;
    return cuda_ok(cudaMalloc(ptr, bytes ? bytes : 1), what);
}

int dev_upload(void *dst, const float *src, size_t n, attn_dtype t)
{
    if (t == ATTN_FP32)
        return cuda_ok(cudaMemcpy(dst, src, n * 4, cudaMemcpyHostToDevice), "upload");
    uint16_t *h = malloc(n * 2);
    if (!h) {
        fprintf(stderr, "out of host memory for an upload\n");
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        h[i] = attn_f32_to_bf16(src[i]);
    int ok = cuda_ok(cudaMemcpy(dst, h, n * 2, cudaMemcpyHostToDevice), "upload");
    free(h);
    return ok;
}

int dev_download(float *dst, const void *src, size_t n, attn_dtype t)
{
    if (t == ATTN_FP32)
        return cuda_ok(cudaMemcpy(dst, src, n * 4, cudaMemcpyDeviceToHost), "download");
    uint16_t *h = malloc(n * 2);
    if (!h) {
        fprintf(stderr, "out of host memory for a download\n");
        return 0;
    }
    int ok = cuda_ok(cudaMemcpy(h, src, n * 2, cudaMemcpyDeviceToHost), "download");
    for (size_t i = 0; ok && i < n; i++)
        dst[i] = attn_bf16_to_f32(h[i]);
    free(h);
    return ok;
}

int dev_poison(void *ptr, size_t bytes)
{
    return cuda_ok(cudaMemset(ptr, 0xff, bytes), "poison");
}
