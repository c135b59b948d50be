/* cli.c: parsing what a user types, FLOP counts, formatting. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

int parse_long(const char *s, long lo, long hi, long *out)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

int parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

int parse_shape(const char *s, attn_problem *p, char *err, size_t errn)
{
    static const char *names[5] = {"B", "H", "Nq", "Nk", "D"};
    const char *c = s ? s : "";
    int fields = 1;
    for (const char *x = c; *x; x++)
        fields += *x == ',';
    if (fields != 5) {
        snprintf(err, errn, "bad shape '%s': expected B,H,Nq,Nk,D, five whole numbers >= 1 (got %d field%s)",
                 c, fields, fields == 1 ? "" : "s");
        return 0;
    }
    long v[5];
    for (int n = 0; n < 5; n++) {
        char *end;
        errno = 0;
        v[n] = strtol(c, &end, 10);
        if (*c < '0' || *c > '9' || *end != (n < 4 ? ',' : 0) || errno || v[n] < 1 || v[n] > INT_MAX) {
            snprintf(err, errn, "bad shape '%s': %s must be a whole number >= 1 (B,H,Nq,Nk,D)", s,
                     names[n]);
            return 0;
        }
        c = end + 1;
    }
    memset(p, 0, sizeof *p);
    p->batch = (int)v[0];
    p->heads = (int)v[1];
    p->seq_q = (int)v[2];
    p->seq_k = (int)v[3];
    p->head_dim = (int)v[4];
    p->dtype = ATTN_FP32;
    p->scale = (float)(1.0 / sqrt((double)p->head_dim));
    return 1;
}

int parse_dtype(const char *s, attn_dtype *t)
{
    if (s && strcmp(s, "fp32") == 0)
        *t = ATTN_FP32;
    else if (s && strcmp(s, "bf16") == 0)
        *t = ATTN_BF16;
    else
        return 0;
    return 1;
}

const char *dtype_name(attn_dtype t) { return t == ATTN_BF16 ? "bf16" : "fp32"; }

double visible_pairs(const attn_problem *p)
{
    const double nq = p->seq_q, nk = p->seq_k;
    if (!p->causal)
        return nq * nk;
    /* rows i < Nk see i+1 keys, rows i >= Nk see all Nk */
    const double full = nq < nk ? nq : nk;
    return full * (full + 1) / 2 + (nq - full) * nk;
}

double attn_flops(const attn_problem *p, int backward)
{
    double f = 4.0 * p->batch * p->heads * (double)p->head_dim * visible_pairs(p);
    return backward ? 2.5 * f : f;
}

void fmt_bytes(double b, char *out, size_t n)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024.0 && u < 5) {
        b /= 1024.0;
        u++;
    }
    snprintf(out, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

size_t tensor_bytes(const attn_problem *p, int backward)
{
    const size_t bh = (size_t)p->batch * p->heads, e = attn_dtype_bytes(p->dtype);
    const size_t q = bh * p->seq_q * p->head_dim * e, kv = bh * p->seq_k * p->head_dim * e;
    const size_t lse = bh * p->seq_q * sizeof(float);
    size_t total = 2 * q + 2 * kv + lse;     /* q, o, k, v, lse */
    if (backward)
        total += 2 * q + 2 * kv;            /* d_o, dq, dk, dv */
    return total;
}

void fmt_shape(const attn_problem *p, char *out, size_t n)
{
    snprintf(out, n, "%d,%d,%d,%d,%d", p->batch, p->heads, p->seq_q, p->seq_k, p->head_dim);
}
