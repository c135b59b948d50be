/* measure.c: one timed measurement, the same for `attn run` and every row of `attn bench`.
 *
 * The method (bench/peer_sdpa.py times the SDPA peers the same way):
 *   1. the checked first run, which is also the warm-up: outputs and workspace poisoned with NaN
 *      (the workspace is undefined on entry, attention.h), then every output checked finite and,
 *      where a reference exists, within ref_scale x check_bound of it;
 *   2. `reps` timed runs, outputs and workspace poisoned once more before the loop, each run after
 *      rewriting a 2 x L2 buffer so no run finds its inputs in cache, CUDA events around the
 *      launch alone; the median is reported with min and max; nothing is allocated in the loop;
 *   3. the outputs after the loop compared with the first run's, within check_bound: a step that
 *      depends on what an earlier call left behind (a workspace it never clears) shows here.
 * For the backward, O and lse come from the step's own forward, run once before all of this.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "measure.h"

const char *const m_status_name[] = {"ok",    "skip",  "unsupported", "oom",
                                     "wrong", "xfail", "changed",     "error"};

/* ------------------------------------------------------------------- device buffers */

typedef struct {
    attn_problem p;
    int backward;
    void *q, *k, *v, *o, *d_o, *dq, *dk, *dv, *ws;
    float *lse;
    size_t ws_bytes;
} devbufs;

static void db_free(devbufs *d)
{
    void *b[] = {d->q, d->k, d->v, d->o, d->d_o, d->dq, d->dk, d->dv, d->ws, d->lse};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i])
            cudaFree(b[i]);
    memset(d, 0, sizeof *d);
}

static int db_alloc(devbufs *d, const host_inputs *in, int backward, size_t ws_bytes)
{
    memset(d, 0, sizeof *d);
    d->p = in->p;
    d->backward = backward;
    d->ws_bytes = ws_bytes;
    const size_t e = attn_dtype_bytes(in->p.dtype);
    const attn_dtype t = in->p.dtype;
    int ok = dev_alloc(&d->q, in->n_q * e, "alloc q") && dev_alloc(&d->k, in->n_kv * e, "alloc k") &&
             dev_alloc(&d->v, in->n_kv * e, "alloc v") && dev_alloc(&d->o, in->n_q * e, "alloc o") &&
             dev_alloc((void **)&d->lse, in->n_lse * 4, "alloc lse") &&
             dev_alloc(&d->ws, ws_bytes, "alloc workspace") && dev_upload(d->q, in->q, in->n_q, t) &&
             dev_upload(d->k, in->k, in->n_kv, t) && dev_upload(d->v, in->v, in->n_kv, t);
    if (ok && backward)
        ok = dev_alloc(&d->d_o, in->n_q * e, "alloc d_o") && dev_alloc(&d->dq, in->n_q * e, "alloc dq") &&
             dev_alloc(&d->dk, in->n_kv * e, "alloc dk") && dev_alloc(&d->dv, in->n_kv * e, "alloc dv") &&
             dev_upload(d->d_o, in->d_o, in->n_q, t);
    if (!ok)
        db_free(d);
    return ok;
}

/* NaN in every output of the pass and in the workspace. */
static int db_poison(devbufs *d, const host_inputs *in)
{
    const size_t e = attn_dtype_bytes(d->p.dtype);
    const int outs = d->backward ? dev_poison(d->dq, in->n_q * e) && dev_poison(d->dk, in->n_kv * e) &&
                                       dev_poison(d->dv, in->n_kv * e)
                                 : dev_poison(d->o, in->n_q * e) && dev_poison(d->lse, in->n_lse * 4);
    return outs && (!d->ws_bytes || dev_poison(d->ws, d->ws_bytes));
}

typedef struct {
    const attn_step *s;
    devbufs *d;
} launch_ctx;

static attn_status launch_fwd(void *ctx, cudaStream_t stream)
{
    launch_ctx *c = ctx;
    devbufs *d = c->d;
    return c->s->forward(&d->p, d->q, d->k, d->v, d->o, d->lse, d->ws, stream);
}

static attn_status launch_bwd(void *ctx, cudaStream_t stream)
{
    launch_ctx *c = ctx;
    devbufs *d = c->d;
    return c->s->backward(&d->p, d->q, d->k, d->v, d->o, d->lse, d->d_o, d->dq, d->dk, d->dv, d->ws,
                          stream);
}

/* ------------------------------------------------------------------------- outputs */

void outputs_free(outputs *o)
{
    for (int i = 0; i < o->count; i++)
        free(o->x[i]);
    memset(o, 0, sizeof *o);
}

static int outputs_download(const devbufs *d, const host_inputs *in, outputs *out)
{
    memset(out, 0, sizeof *out);
    const void *src[3];
    attn_dtype t[3] = {d->p.dtype, d->p.dtype, d->p.dtype};
    if (!d->backward) {
        *out = (outputs){2, {"O", "lse"}, {in->n_q, in->n_lse}, {NULL}};
        src[0] = d->o;
        src[1] = d->lse;
        t[1] = ATTN_FP32;
    } else {
        *out = (outputs){3, {"dQ", "dK", "dV"}, {in->n_q, in->n_kv, in->n_kv}, {NULL}};
        src[0] = d->dq;
        src[1] = d->dk;
        src[2] = d->dv;
    }
    for (int i = 0; i < out->count; i++) {
        float *h = malloc((out->n[i] ? out->n[i] : 1) * sizeof(float));
        out->x[i] = malloc((out->n[i] ? out->n[i] : 1) * sizeof(double));
        if (!h || !out->x[i] || !dev_download(h, src[i], out->n[i], t[i])) {
            free(h);
            outputs_free(out);
            return 0;
        }
        for (size_t j = 0; j < out->n[i]; j++)
            out->x[i][j] = h[j];
        free(h);
    }
    return 1;
}

/* got against ref, tensor by tensor, each within scale x check_bound(dtype, tensor). Returns 1 if
 * all pass (NaN and Inf never do); the tensor closest to or furthest past its bound is reported. */
static int outputs_close(const outputs *got, const outputs *ref, attn_dtype dtype, double scale,
                         double *err, double *bound, const char **tensor)
{
    int all = 1;
    double worst = -1;
    *err = NAN;
    *bound = NAN;
    *tensor = got->name[0];
    for (int i = 0; i < got->count; i++) {
        float *g = malloc((got->n[i] ? got->n[i] : 1) * sizeof(float));
        if (!g)
            return 0;
        for (size_t j = 0; j < got->n[i]; j++)
            g[j] = (float)got->x[i][j];
        const attn_err e = attn_compare(ref->x[i], g, got->n[i]);
        free(g);
        const double b = scale * check_bound(dtype, got->name[i]);
        const int pass = attn_err_pass(&e, b);
        const double ratio = pass ? e.rel_l2 / b : INFINITY;
        all &= pass;
        if (ratio > worst) {
            worst = ratio;
            *err = e.rel_l2;
            *bound = b;
            *tensor = got->name[i];
        }
    }
    return all;
}

static int outputs_finite(const outputs *o)
{
    for (int i = 0; i < o->count; i++)
        for (size_t j = 0; j < o->n[i]; j++)
            if (!isfinite(o->x[i][j]))
                return 0;
    return 1;
}

/* ------------------------------------------------------------------- one measurement */

int measure_fits(const attn_step *s, const attn_problem *p, int backward, char *msg, size_t n)
{
    size_t free_b = 0, total_b = 0;
    if (!cuda_ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo")) {
        snprintf(msg, n, "cannot ask the GPU how much memory is free");
        return 0;
    }
    const size_t ws = s->workspace_bytes(p, backward), tensors = tensor_bytes(p, backward);
    const size_t margin = 256u << 20;   /* the L2 flush buffer, the CUDA context's own needs */
    if (ws + tensors + margin <= free_b)
        return 1;
    char shape[64], need[32], have[32], tb[32];
    fmt_shape(p, shape, sizeof shape);
    fmt_bytes((double)free_b, have, sizeof have);
    if (ws + margin > free_b) {
        fmt_bytes((double)ws, need, sizeof need);
        snprintf(msg, n, "%s needs %s of workspace for %s; the GPU has %s free", s->name, need, shape,
                 have);
    } else {
        fmt_bytes((double)(ws + tensors), need, sizeof need);
        fmt_bytes((double)tensors, tb, sizeof tb);
        snprintf(msg, n, "%s needs %s for %s (tensors %s plus workspace); the GPU has %s free",
                 s->name, need, shape, tb, have);
    }
    return 0;
}

void measure(const attn_step *s, const host_inputs *in, int backward, int cc, const outputs *ref,
             double ref_scale, int reps, gpu_timer *timer, outputs *keep, measurement *m)
{
    const attn_problem *p = &in->p;
    memset(m, 0, sizeof *m);
    m->err = m->err_bound = NAN;
    const char *why = NULL;
    if (!attn_gpu_fits(s, cc, &why)) {
        m->status = M_SKIP;
        snprintf(m->why, sizeof m->why, "%s: %s", s->name, why);
        return;
    }
    if (backward && !s->backward) {
        m->status = M_UNSUPPORTED;
        snprintf(m->why, sizeof m->why, "%s is forward only", s->name);
        return;
    }
    if (s->supports(p, backward, &why) != ATTN_OK) {
        m->status = M_UNSUPPORTED;
        snprintf(m->why, sizeof m->why, "%s: %s", s->name, why ? why : "not supported");
        return;
    }
    m->ws_bytes = s->workspace_bytes(p, backward);
    if (!measure_fits(s, p, backward, m->why, sizeof m->why)) {
        m->status = M_OOM;
        return;
    }
    /* The backward's O and lse come from the step's own forward, on the same workspace. */
    size_t ws_alloc = m->ws_bytes;
    if (backward && s->workspace_bytes(p, 0) > ws_alloc)
        ws_alloc = s->workspace_bytes(p, 0);
    devbufs d;
    if (!db_alloc(&d, in, backward, ws_alloc)) {
        m->status = M_OOM;
        snprintf(m->why, sizeof m->why, "%s: device allocation failed", s->name);
        cudaGetLastError();
        return;
    }
    launch_ctx ctx = {s, &d};
    launch_fn fn = backward ? launch_bwd : launch_fwd;
    outputs first = {0}, after = {0};
    attn_status st = ATTN_OK;
    float first_ms = 0.f;
    m->status = M_ERROR;
    if (backward) {   /* O and lse from the step's own forward, untimed */
        st = d.ws_bytes && !dev_poison(d.ws, d.ws_bytes) ? ATTN_ERR_CUDA : launch_fwd(&ctx, timer->stream);
        if (st != ATTN_OK) {
            snprintf(m->why, sizeof m->why, "%s: the forward that the backward needs failed (status %d)",
                     s->name, (int)st);
            goto done;
        }
    }
    /* 1. the checked first run */
    int ok = db_poison(&d, in) && cuda_ok(cudaEventRecord(timer->start, timer->stream), "cudaEventRecord");
    if (ok) {
        st = fn(&ctx, timer->stream);
        ok = st == ATTN_OK && cuda_ok(cudaEventRecord(timer->stop, timer->stream), "cudaEventRecord") &&
             cuda_ok(cudaEventSynchronize(timer->stop), s->name) &&
             cuda_ok(cudaEventElapsedTime(&first_ms, timer->start, timer->stop), "elapsed") &&
             outputs_download(&d, in, &first);
    }
    if (!ok) {
        snprintf(m->why, sizeof m->why, "%s: the checked run failed (status %d)", s->name, (int)st);
        goto done;
    }
    m_status verdict = M_OK;
    if (!outputs_finite(&first)) {
        m->status = M_WRONG;
        snprintf(m->why, sizeof m->why, "%s: NaN or Inf in the outputs of the checked run", s->name);
        goto done;
    }
    if (ref && !outputs_close(&first, ref, p->dtype, ref_scale, &m->err, &m->err_bound, &m->err_tensor)) {
        verdict = s->known_bug && s->known_bug(p) ? M_XFAIL : M_WRONG;
        snprintf(m->why, sizeof m->why, "%s: %s differs from the reference by rel-L2 %.2e (bound %.0e)",
                 s->name, m->err_tensor, m->err, m->err_bound);
    }
    /* 2. the timed runs */
    if (reps <= 0)
        reps = timer_reps(first_ms, 200.0, 3, 30);
    st = db_poison(&d, in) ? timer_run(timer, fn, &ctx, reps, &m->t) : ATTN_ERR_CUDA;
    if (st != ATTN_OK) {
        m->t.reps = 0;
        snprintf(m->why, sizeof m->why, "%s: a timed run failed (status %d)", s->name, (int)st);
        goto done;
    }
    m->tflops = attn_flops(p, backward) / (m->t.median_ms * 1e-3) / 1e12;
    /* 3. the outputs after the timing loop against the first run's */
    if (!outputs_download(&d, in, &after)) {
        snprintf(m->why, sizeof m->why, "%s: download after timing failed", s->name);
        goto done;
    }
    double e, b;
    const char *t;
    if (!outputs_close(&after, &first, p->dtype, 1.0, &e, &b, &t)) {
        m->status = M_CHANGED;
        snprintf(m->why, sizeof m->why, "%s: %s after the timing loop differs from the checked run's "
                 "by rel-L2 %.2e (bound %.0e)%s", s->name, t, e, b,
                 isfinite(e) ? "" : ": NaN or Inf");
        goto done;
    }
    m->status = verdict;
    if (keep) {
        *keep = first;
        memset(&first, 0, sizeof first);
    }
done:
    if (m->status == M_ERROR && !m->why[0])
        snprintf(m->why, sizeof m->why, "%s failed", s->name);
    outputs_free(&first);
    outputs_free(&after);
    db_free(&d);
}

int gpu_setup(gpu_info *g, gpu_timer *timer)
{
    cudaStream_t stream;
    return gpu_query(g) && cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate") &&
           timer_init(timer, stream);
}

void gpu_teardown(gpu_timer *timer)
{
    cudaStream_t stream = timer->stream;
    timer_free(timer);
    cudaStreamDestroy(stream);
}
