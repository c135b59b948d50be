/* metrics.c: how far an output is from the reference, over the whole tensor and block by block
 * of rows. NaN and Inf never pass. */
#include <math.h>
#include "harness.h"

attn_err attn_compare(const double *ref, const float *got, size_t n)
{
    attn_err e = {0};
    double num = 0.0, den = 0.0;
    int worst_is_nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        const double g = got[i], diff = fabs(g - ref[i]);
        if (!isfinite(g)) {
            if (!worst_is_nonfinite) {     /* the first non-finite element is the one to show */
                e.worst = i;
                worst_is_nonfinite = 1;
            }
            e.nonfinite++;
            continue;
        }
        num += diff * diff;
        den += ref[i] * ref[i];
        if (!worst_is_nonfinite && !(diff <= e.max_abs)) {
            e.max_abs = diff;
            e.worst = i;
        }
    }
    /* A reference that is exactly zero (dQ and dK when Nk = 1: a softmax over one key is
     * constant) has no scale of its own; then the error is measured against unit-scale data,
     * as the RMS of the difference. */
    e.rel_l2 = e.nonfinite ? NAN : den > 0.0 ? sqrt(num / den) : n ? sqrt(num / (double)n) : 0.0;
    if (n) {
        e.worst_ref = ref[e.worst];
        e.worst_got = got[e.worst];
    }
    if (e.nonfinite)
        e.max_abs = INFINITY;
    e.block_rel_l2 = e.rel_l2;   /* one block: the whole tensor (block_rows 0) */
    return e;
}

attn_err attn_compare_blocks(const double *ref, const float *got, size_t heads, int rows, int cols,
                             int block_rows)
{
    attn_err e = attn_compare_blocks_bounded(ref, got, heads, rows, cols, block_rows, 1.0, NULL);
    e.block_bound = 0.0;
    return e;
}

attn_err attn_compare_blocks_bounded(const double *ref, const float *got, size_t heads, int rows,
                                     int cols, int block_rows, double block_bound,
                                     const double *block_floor)
{
    const size_t n = heads * (size_t)rows * (size_t)cols;
    attn_err e = attn_compare(ref, got, n);
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += ref[i] * ref[i];
    /* the whole reference's RMS (unit scale if it is exactly zero, as rel_l2 above) */
    const double rms = ss > 0.0 ? sqrt(ss / (double)n) : 1.0;
    const int tiles = (rows + block_rows - 1) / block_rows;
    int have = 0;
    double worst = 0.0;   /* the reported block's rel-L2 over its bound */
    e.block_rel_l2 = NAN;
    e.block_bh = 0;
    e.block_tile = 0;
    e.block_rows = block_rows;
    e.block_bound = block_bound;
    for (size_t h = 0; h < heads; h++)
        for (int r0 = 0, tile = 0; r0 < rows; r0 += block_rows, tile++) {
            const int r1 = rows - r0 < block_rows ? rows : r0 + block_rows;
            const size_t a = (h * rows + r0) * (size_t)cols, b = (h * rows + r1) * (size_t)cols;
            double num = 0.0, den = 0.0;
            int finite = 1;
            for (size_t i = a; i < b; i++) {
                const double d = (double)got[i] - ref[i];
                finite &= isfinite(got[i]) != 0;
                num += d * d;
                den += ref[i] * ref[i];
            }
            const double floor = sqrt((double)(b - a)) * rms;
            const double err = finite ? sqrt(num) / fmax(sqrt(den), floor) : NAN;
            const double bound = block_floor ? fmax(block_bound, block_floor[h * tiles + tile])
                                             : block_bound;
            /* the first non-finite block stays the worst; else the furthest over its bound */
            if (!have || (!isnan(e.block_rel_l2) && (isnan(err) || err / bound > worst))) {
                have = 1;
                e.block_rel_l2 = err;
                e.block_bh = h;
                e.block_tile = tile;
                e.block_bound = bound;
                worst = err / bound;
            }
        }
    return e;
}

int attn_err_pass(const attn_err *e, double bound)
{
    if (e->nonfinite)
        return 0;
    return e->rel_l2 <= bound;   /* a NaN error compares false: fail */
}

int attn_err_pass_blocks(const attn_err *e, double bound, double block_bound)
{
    return attn_err_pass(e, bound) && e->block_rel_l2 <= block_bound;   /* NaN: fail */
}

void attn_unflatten(size_t idx, int heads, int rows, int cols, int out[4])
{
    out[3] = (int)(idx % (size_t)cols);
    idx /= (size_t)cols;
    out[2] = (int)(idx % (size_t)rows);
    idx /= (size_t)rows;
    out[1] = (int)(idx % (size_t)heads);
    out[0] = (int)(idx / (size_t)heads);
}
