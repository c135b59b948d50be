/* reference.c: the fp64 CPU reference every step is checked against.
 * Inputs are float arrays holding exactly what the GPU saw; all arithmetic is double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

/* The K/V head that batch-head bh (b*H + h) reads: b*H_kv + h / (H / H_kv) (grouped-query
 * attention; bh itself when H_kv = H). */
static size_t kv_head(const attn_problem *p, size_t bh)
{
    const size_t h = (size_t)p->heads, hkv = (size_t)attn_heads_kv(p);
    return bh / h * hkv + bh % h / (h / hkv);
}

/* Keys row i may see: all Nk, or j <= i when causal (top-left). Always >= 1. */
static int visible_keys(const attn_problem *p, int i)
{
    if (!p->causal)
        return p->seq_k;
    return i + 1 < p->seq_k ? i + 1 : p->seq_k;
}

static double dot(const float *a, const float *b, int d)
{
    double s = 0.0;
    for (int e = 0; e < d; e++)
        s += (double)a[e] * (double)b[e];
    return s;
}

/* x rounded as an operand of the given precision, or x itself. */
static double operand(double x, ref_precision t)
{
    if (t == REF_BF16_OPERANDS)
        return (double)attn_bf16_to_f32(attn_f32_to_bf16((float)x));
    return t == REF_FP32_OPERANDS ? (double)(float)x : x;
}

/* x as a GPU backward holds it in registers or memory: fp32 in either precision (S, dP and D are
 * fp32 accumulators even where P and dS become bf16 operands), or x itself when exact. */
static double held(double x, ref_precision t)
{
    return t == REF_EXACT ? x : (double)(float)x;
}

/* A dot product as a GPU accumulates it: in fp32 (exact in fp64 for REF_EXACT). */
static double dot_as(const float *a, const float *b, int d, ref_precision t)
{
    if (t == REF_EXACT)
        return dot(a, b, d);
    float s = 0.f;
    for (int e = 0; e < d; e++)
        s = fmaf(a[e], b[e], s);
    return s;
}

/* Scaled scores of row i of one head into s[0..n), n = visible keys; returns the max. Exact, or
 * (REF_FP32_OPERANDS) each score an fp32 dot product, scaled in fp32, as a GPU holds it. */
static double row_scores(const attn_problem *p, const float *qi, const float *k, double *s, int n,
                         ref_precision t)
{
    double m = -INFINITY;
    for (int j = 0; j < n; j++) {
        s[j] = held((double)p->scale * dot_as(qi, k + (size_t)j * p->head_dim, p->head_dim, t), t);
        if (s[j] > m)
            m = s[j];
    }
    return m;
}

/* Row i of one head (kh, vh: its keys and values): oi[0..d) and *lse_i. s: Nk scratch doubles. */
static void forward_row(const attn_problem *p, const float *qi, const float *kh, const float *vh,
                        int i, double *s, double *oi, double *lse_i, ref_precision t)
{
    const int d = p->head_dim, n = visible_keys(p, i);
    const double m = row_scores(p, qi, kh, s, n, t);
    double l = 0.0;
    for (int j = 0; j < n; j++)
        l += (s[j] = exp(s[j] - m));   /* s now holds the unnormalised P */
    for (int e = 0; e < d; e++)
        oi[e] = 0.0;
    for (int j = 0; j < n; j++)
        for (int e = 0; e < d; e++)
            oi[e] += s[j] * vh[(size_t)j * d + e];
    for (int e = 0; e < d; e++)
        oi[e] /= l;
    *lse_i = m + log(l);
}

void ref_forward(const attn_problem *p, const float *q, const float *k, const float *v,
                 double *o, double *lse)
{
    ref_forward_scores(p, q, k, v, REF_EXACT, o, lse);
}

void ref_forward_scores(const attn_problem *p, const float *q, const float *k, const float *v,
                        ref_precision scores, double *o, double *lse)
{
    const int nq = p->seq_q, nk = p->seq_k, d = p->head_dim;
    double *s = malloc((size_t)nk * sizeof(double));
    for (size_t bh = 0; bh < (size_t)p->batch * p->heads; bh++)
        for (int i = 0; i < nq; i++)
            forward_row(p, q + (bh * nq + i) * d, k + kv_head(p, bh) * nk * d,
                        v + kv_head(p, bh) * nk * d, i, s, o + (bh * nq + i) * d, lse + bh * nq + i,
                        scores);
    free(s);
}

void ref_forward_rows(const attn_problem *p, const float *q, const float *k, const float *v,
                      const int *rows, int nrows, double *o, double *lse)
{
    const int nq = p->seq_q, nk = p->seq_k, d = p->head_dim;
    double *s = malloc((size_t)nk * sizeof(double));
    for (size_t bh = 0; bh < (size_t)p->batch * p->heads; bh++)
        for (int r = 0; r < nrows; r++) {
            const int i = rows[bh * nrows + r];
            forward_row(p, q + (bh * nq + i) * d, k + kv_head(p, bh) * nk * d,
                        v + kv_head(p, bh) * nk * d, i, s, o + (bh * nrows + r) * d,
                        lse + bh * nrows + r, REF_EXACT);
        }
    free(s);
}

void ref_forward_tiled(const attn_problem *p, const float *q, const float *k, const float *v,
                       int tile, double *o, double *lse)
{
    const int nq = p->seq_q, nk = p->seq_k, d = p->head_dim;
    double *s = malloc((size_t)tile * sizeof(double));
    for (size_t bh = 0; bh < (size_t)p->batch * p->heads; bh++) {
        const float *kh = k + kv_head(p, bh) * nk * d, *vh = v + kv_head(p, bh) * nk * d;
        for (int i = 0; i < nq; i++) {
            const int n = visible_keys(p, i);
            const float *qi = q + (bh * nq + i) * d;
            double *acc = o + (bh * nq + i) * d;
            double m = -INFINITY, l = 0.0;             /* running max and sum */
            for (int e = 0; e < d; e++)
                acc[e] = 0.0;
            for (int j0 = 0; j0 < n; j0 += tile) {
                const int t = n - j0 < tile ? n - j0 : tile;
                double m_tile = row_scores(p, qi, kh + (size_t)j0 * d, s, t, REF_EXACT);
                double m_new = m > m_tile ? m : m_tile;
                double alpha = exp(m - m_new);         /* rescales what was summed so far */
                l *= alpha;
                for (int e = 0; e < d; e++)
                    acc[e] *= alpha;
                for (int j = 0; j < t; j++) {
                    double pj = exp(s[j] - m_new);
                    l += pj;
                    for (int e = 0; e < d; e++)
                        acc[e] += pj * vh[(size_t)(j0 + j) * d + e];
                }
                m = m_new;
            }
            for (int e = 0; e < d; e++)
                acc[e] /= l;                           /* normalise once, at the end */
            lse[bh * nq + i] = m + log(l);
        }
    }
    free(s);
}

/* P_ij and dS_ij of query row i (qi, its dO doi, D_i = di, lse_i) and key j (kj, vj). */
static void p_and_ds(const attn_problem *p, const float *qi, const float *kj, const float *vj,
                     const float *doi, double di, double lse_i, ref_precision t, double *pij,
                     double *ds)
{
    const int d = p->head_dim;
    const double sij = held(p->scale * dot_as(qi, kj, d, t), t);
    *pij = operand(exp(held(sij - lse_i, t)), t);
    const double dpij = held(dot_as(doi, vj, d, t), t);
    *ds = operand(*pij * (dpij - di), t);
}

void ref_backward(const attn_problem *p, const float *q, const float *k, const float *v,
                  const float *o, const float *lse, const float *d_o, ref_precision operands,
                  double *dq, double *dk, double *dv)
{
    const int nq = p->seq_q, nk = p->seq_k, d = p->head_dim;
    const size_t bhn = (size_t)p->batch * p->heads, kvn = (size_t)p->batch * attn_heads_kv(p);
    memset(dk, 0, kvn * nk * d * sizeof(double));
    memset(dv, 0, kvn * nk * d * sizeof(double));
    for (size_t bh = 0; bh < bhn; bh++) {   /* dK, dV of a K/V head: the sum over its query heads */
        const size_t kvh = kv_head(p, bh);
        const float *kh = k + kvh * nk * d, *vh = v + kvh * nk * d;
        double *dkh = dk + kvh * nk * d, *dvh = dv + kvh * nk * d;
        for (int i = 0; i < nq; i++) {
            const size_t row = bh * nq + i;
            const float *qi = q + row * d, *oi = o + row * d, *doi = d_o + row * d;
            double *dqi = dq + row * d;
            /* D_i = rowsum(dO * O) */
            const double di = held(dot_as(doi, oi, d, operands), operands);
            for (int e = 0; e < d; e++)
                dqi[e] = 0.0;
            for (int j = 0; j < visible_keys(p, i); j++) {
                const float *kj = kh + (size_t)j * d, *vj = vh + (size_t)j * d;
                double pij, ds;
                p_and_ds(p, qi, kj, vj, doi, di, lse[row], operands, &pij, &ds);
                /* the sums that make dV, dQ and dK: fp32 accumulators on a GPU */
                for (int e = 0; e < d; e++) {
                    double *dve = &dvh[(size_t)j * d + e], *dke = &dkh[(size_t)j * d + e];
                    *dve = held(*dve + pij * doi[e], operands);
                    dqi[e] = held(dqi[e] + p->scale * ds * kj[e], operands);
                    *dke = held(*dke + p->scale * ds * qi[e], operands);
                }
            }
        }
    }
}

/* The standard deviation of the rounding error of a . b summed in fp32, one term after another:
 * each addition rounds by up to u |partial sum| (u = 2^-24), uniformly, so its variance is
 * u^2 partial^2 / 3. The partial sums are exact here. */
static double fp32_dot_sd(const float *a, const float *b, int d)
{
    double s = 0.0, v = 0.0;
    for (int e = 0; e < d; e++) {
        s += (double)a[e] * (double)b[e];
        v += s * s;
    }
    return 0x1p-24 * sqrt(v / 3.0);
}

void ref_backward_spread(const attn_problem *p, const float *q, const float *k, const float *v,
                         const float *o, const float *lse, const float *d_o, double *dq2,
                         double *dk2)
{
    const int nq = p->seq_q, nk = p->seq_k, d = p->head_dim;
    const size_t bhn = (size_t)p->batch * p->heads, kvn = (size_t)p->batch * attn_heads_kv(p);
    memset(dq2, 0, bhn * nq * d * sizeof(double));
    memset(dk2, 0, kvn * nk * d * sizeof(double));
    for (size_t bh = 0; bh < bhn; bh++) {
        const size_t kvh = kv_head(p, bh);
        const float *kh = k + kvh * nk * d, *vh = v + kvh * nk * d;
        for (int i = 0; i < nq; i++) {
            const size_t row = bh * nq + i;
            const float *qi = q + row * d, *doi = d_o + row * d;
            const double sd_di = fp32_dot_sd(doi, o + row * d, d);
            for (int j = 0; j < visible_keys(p, i); j++) {
                const float *kj = kh + (size_t)j * d;
                const double pij = exp(p->scale * dot(qi, kj, d) - lse[row]);
                const double sd_dp = fp32_dot_sd(doi, vh + (size_t)j * d, d);
                const double e = p->scale * pij * 3.0 * sqrt(sd_dp * sd_dp + sd_di * sd_di);
                for (int x = 0; x < d; x++) {
                    dq2[row * d + x] += e * kj[x] * e * kj[x];
                    dk2[(kvh * nk + j) * d + x] += e * qi[x] * e * qi[x];
                }
            }
        }
    }
}

void ref_backward_rows(const attn_problem *p, const float *q, const float *k, const float *v,
                       const float *o, const float *lse, const float *d_o, const int *q_rows,
                       int nq_rows, const int *k_rows, int nk_rows, double *dq, double *dk,
                       double *dv)
{
    const int nq = p->seq_q, nk = p->seq_k, d = p->head_dim;
    double *di = malloc((size_t)nq * sizeof(double));   /* D_i = rowsum(dO * O) of one head */
    /* dK, dV of a K/V head sum over its query heads: zeroed first, added to per query head */
    memset(dk, 0, (size_t)p->batch * attn_heads_kv(p) * nk_rows * d * sizeof(double));
    memset(dv, 0, (size_t)p->batch * attn_heads_kv(p) * nk_rows * d * sizeof(double));
    for (size_t bh = 0; bh < (size_t)p->batch * p->heads; bh++) {
        const size_t kvh = kv_head(p, bh);
        const float *qh = q + bh * nq * d, *kh = k + kvh * nk * d, *vh = v + kvh * nk * d,
                    *doh = d_o + bh * nq * d, *lh = lse + bh * nq;
        for (int i = 0; i < nq; i++)
            di[i] = dot(doh + (size_t)i * d, o + (bh * nq + i) * d, d);
        for (int r = 0; r < nq_rows; r++) {   /* dQ_i: its row against every visible key */
            const int i = q_rows[bh * nq_rows + r];
            const float *qi = qh + (size_t)i * d, *doi = doh + (size_t)i * d;
            double *dqi = dq + (bh * nq_rows + r) * d;
            for (int e = 0; e < d; e++)
                dqi[e] = 0.0;
            for (int j = 0; j < visible_keys(p, i); j++) {
                const float *kj = kh + (size_t)j * d;
                double pij, ds;
                p_and_ds(p, qi, kj, vh + (size_t)j * d, doi, di[i], lh[i], REF_EXACT, &pij, &ds);
                for (int e = 0; e < d; e++)
                    dqi[e] += p->scale * ds * kj[e];
            }
        }
        for (int r = 0; r < nk_rows; r++) {   /* dK_j, dV_j: its key against every query that sees it */
            const int j = k_rows[kvh * nk_rows + r];
            const float *kj = kh + (size_t)j * d, *vj = vh + (size_t)j * d;
            double *dkj = dk + (kvh * nk_rows + r) * d, *dvj = dv + (kvh * nk_rows + r) * d;
            for (int i = p->causal ? j : 0; i < nq; i++) {
                const float *qi = qh + (size_t)i * d, *doi = doh + (size_t)i * d;
                double pij, ds;
                p_and_ds(p, qi, kj, vj, doi, di[i], lh[i], REF_EXACT, &pij, &ds);
                for (int e = 0; e < d; e++) {
                    dvj[e] += pij * doi[e];
                    dkj[e] += p->scale * ds * qi[e];
                }
            }
        }
    }
    free(di);
}
