/* metrics.c: how far an output is from the reference. NaN and Inf never pass. */
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
    return e;
}

int attn_err_pass(const attn_err *e, double bound)
{
    if (e->nonfinite)
        return 0;
    return e->rel_l2 <= bound;   /* a NaN error compares false: fail */
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
