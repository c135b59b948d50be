/* measure.c: one timed measurement, the same for `attn run` and every row of `attn bench`.
 *
 * The method (bench/peer_sdpa.py times the SDPA peers the same way):
 *   1. the checked first run, which is also the warm-up: outputs and workspace poisoned with NaN
 *      (the workspace is undefined on entry, attention.h), then every output checked finite and,
 *      where a reference exists, within its bounds, as attn check does: the whole tensor and
 *      every block of CHECK_BLOCK_ROWS rows of one head. The reference is step 00 on the same
 *      inputs where it fits (itself bf16 where the problem is: twice the bounds), else a sample
 *      of rows against the fp64 CPU reference (measure.h: row_sample);
 *   2. `reps` timed runs, outputs and workspace poisoned once more before the loop, each run after
 *      rewriting a 2 x L2 buffer so no run finds its inputs in cache, CUDA events around the
 *      launch alone; the median is reported with min and max; nothing is allocated in the loop;
 *   3. the outputs after the loop compared with the first run's, within check_bound: a step that
 *      depends on what an earlier call left behind (a workspace it never clears) shows here.
 * For the backward, O and lse come from the step's own forward, run once before all of this.
 * What lies between the two events is the GPU's work alone: a step's call only launches kernels,
 * so its few microseconds of host time overlap the GPU's. The peers' Python calls take far longer
 * on the host (FlashAttention-4's dispatch tens of microseconds), so bench/peer_sdpa.py times a
 * CUDA-graph replay of each call, or, where a call cannot be captured, queues a ~1 ms GPU spin
 * (torch.cuda._sleep) before the start event, so that the host's work ends while the GPU is still
 * spinning and never lands between the events.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* The names and shapes of a pass's outputs, with rows nq (O, lse, dQ) and nk (dK, dV) per head:
 * the whole tensors, or a sample's rows. x[] allocated, not filled. */
static int outputs_alloc(outputs *out, const attn_problem *p, int backward, int nq, int nk)
{
    const size_t bh = (size_t)p->batch * p->heads, bkv = (size_t)p->batch * attn_heads_kv(p);
    const int d = p->head_dim;
    if (!backward)
        *out = (outputs){2, {"O", "lse"}, {bh * nq * d, bh * nq}, {NULL}, {bh, bh}, {nq, nq}, {d, 1}};
    else
        *out = (outputs){3, {"dQ", "dK", "dV"}, {bh * nq * d, bkv * nk * d, bkv * nk * d}, {NULL},
                         {bh, bkv, bkv}, {nq, nk, nk}, {d, d, d}};
    for (int i = 0; i < out->count; i++)
        if (!(out->x[i] = malloc((out->n[i] ? out->n[i] : 1) * sizeof(double)))) {
            outputs_free(out);
            return 0;
        }
    return 1;
}

static int outputs_download(const devbufs *d, outputs *out)
{
    const void *src[3];
    attn_dtype t[3] = {d->p.dtype, d->p.dtype, d->p.dtype};
    if (!outputs_alloc(out, &d->p, d->backward, d->p.seq_q, d->p.seq_k))
        return 0;
    if (!d->backward) {
        src[0] = d->o;
        src[1] = d->lse;
        t[1] = ATTN_FP32;
    } else {
        src[0] = d->dq;
        src[1] = d->dk;
        src[2] = d->dv;
    }
    for (int i = 0; i < out->count; i++) {
        float *h = malloc((out->n[i] ? out->n[i] : 1) * sizeof(float));
        if (!h || !dev_download(h, src[i], out->n[i], t[i])) {
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

/* got against ref, tensor by tensor, each within scale x check_bound(dtype, tensor) and each
 * block of rows within check_block_bound of that. With a sample, ref holds only the sample's
 * rows (q_rows for O, lse and dQ; k_rows for dK and dV), and got's rows are picked to match; the
 * rows of one head then make one block (SAMPLE_ROWS <= CHECK_BLOCK_ROWS). Returns 1 if all pass
 * (NaN and Inf never do), 0 if any fails, -1 out of memory; the tensor closest to or furthest
 * past its bounds is reported in diff. */
static int outputs_close(const outputs *got, const outputs *ref, const row_sample *sample,
                         attn_dtype dtype, double scale, const attn_problem *p, ref_diff *diff)
{
    int all = 1;
    double worst = -1;
    *diff = (ref_diff){got->name[0], NAN, NAN, NAN, NAN, 0, 0, 0};
    for (int i = 0; i < got->count; i++) {
        float *g = malloc((ref->n[i] ? ref->n[i] : 1) * sizeof(float));
        if (!g)
            return -1;
        const int kv = i > 0 && got->count == 3;   /* dK, dV: rows are keys */
        const int *pick = !sample ? NULL : kv ? sample->k_rows : sample->q_rows;
        const size_t cols = (size_t)got->cols[i];
        for (size_t h = 0; h < ref->heads[i]; h++)
            for (int r = 0; r < ref->rows[i]; r++) {
                const int src = pick ? pick[h * ref->rows[i] + r] : r;
                const double *from = got->x[i] + (h * got->rows[i] + src) * cols;
                float *to = g + (h * ref->rows[i] + r) * cols;
                for (size_t c = 0; c < cols; c++)
                    to[c] = (float)from[c];
            }
        const attn_err e = attn_compare_blocks(ref->x[i], g, ref->heads[i], ref->rows[i], ref->cols[i],
                                               CHECK_BLOCK_ROWS);
        free(g);
        const double b = scale * check_bound(dtype, got->name[i]), bb = check_block_bound(b);
        const int pass = attn_err_pass_blocks(&e, b, bb);
        const double ratio = pass ? fmax(e.rel_l2 / b, e.block_rel_l2 / bb) : INFINITY;
        all &= pass;
        if (ratio > worst) {
            const int H = kv ? attn_heads_kv(p) : p->heads;   /* the block's (b, h) */
            worst = ratio;
            *diff = (ref_diff){got->name[i], e.rel_l2, b, e.block_rel_l2, bb,
                               (int)(e.block_bh / (size_t)H), (int)(e.block_bh % (size_t)H),
                               e.block_tile};
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

/* ------------------------------------------------------------------- a sample of rows */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* n distinct rows of 0 .. N-1 per head, ascending: all of them if N <= n; else the first and the
 * last (the ragged end of the last tile) and n - 2 at random. */
static int *pick_rows(size_t heads, int N, int n, uint64_t *rng)
{
    int *rows = malloc(heads * (size_t)n * sizeof(int));
    for (size_t h = 0; rows && h < heads; h++) {
        int *r = rows + h * n;
        if (N <= n) {
            for (int i = 0; i < n; i++)
                r[i] = i;
            continue;
        }
        r[0] = 0;
        r[1] = N - 1;
        for (int got = 2; got < n;) {
            const int x = (int)(splitmix(rng) % (uint64_t)N);
            int dup = 0;
            for (int i = 0; i < got && !dup; i++)
                dup = r[i] == x;
            if (!dup)
                r[got++] = x;
        }
        qsort(r, (size_t)n, sizeof(int), cmp_int);
    }
    return rows;
}

void sample_free(row_sample *s)
{
    free(s->q_rows);
    free(s->k_rows);
    outputs_free(&s->fwd);
    memset(s, 0, sizeof *s);
}

int sample_make(row_sample *s, const host_inputs *in, int backward, uint64_t seed)
{
    const attn_problem *p = &in->p;
    const size_t bh = (size_t)p->batch * p->heads, bkv = (size_t)p->batch * attn_heads_kv(p);
    memset(s, 0, sizeof *s);
    s->nq = p->seq_q < SAMPLE_ROWS ? p->seq_q : SAMPLE_ROWS;
    s->nk = p->seq_k < SAMPLE_ROWS ? p->seq_k : SAMPLE_ROWS;
    uint64_t rng = seed;
    s->q_rows = pick_rows(bh, p->seq_q, s->nq, &rng);
    s->k_rows = pick_rows(bkv, p->seq_k, s->nk, &rng);
    if (!s->q_rows || !s->k_rows) {
        sample_free(s);
        return 0;
    }
    if (backward)
        return 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!outputs_alloc(&s->fwd, p, 0, s->nq, s->nq)) {
        sample_free(s);
        return 0;
    }
    ref_forward_rows(p, in->q, in->k, in->v, s->q_rows, s->nq, s->fwd.x[0], s->fwd.x[1]);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return 1;
}

/* The backward's reference on the sample: from the O and lse of the step's own forward (left in
 * d->o and d->lse), as the backward itself received them. */
static int sample_backward(const row_sample *s, const devbufs *d, const host_inputs *in,
                           outputs *ref)
{
    const attn_problem *p = &d->p;
    float *o = malloc((in->n_q ? in->n_q : 1) * sizeof(float));
    float *lse = malloc((in->n_lse ? in->n_lse : 1) * sizeof(float));
    int ok = o && lse && dev_download(o, d->o, in->n_q, p->dtype) &&
             dev_download(lse, d->lse, in->n_lse, ATTN_FP32) &&
             outputs_alloc(ref, p, 1, s->nq, s->nk);
    if (ok)
        ref_backward_rows(p, in->q, in->k, in->v, o, lse, in->d_o, s->q_rows, s->nq, s->k_rows,
                          s->nk, ref->x[0], ref->x[1], ref->x[2]);
    free(o);
    free(lse);
    return ok;
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

/* Step 00 is checked against the fp64 reference within the bounds, and is bf16 itself where the
 * problem is: another step may differ from it by the sum of both errors, hence twice. */
static const double STEP00_SCALE = 2.0;

void measure(const attn_step *s, const host_inputs *in, int backward, int cc, const reference *ref,
             int reps, gpu_timer *timer, outputs *keep, measurement *m)
{
    const attn_problem *p = &in->p;
    memset(m, 0, sizeof *m);
    m->diff = (ref_diff){NULL, NAN, NAN, NAN, NAN, 0, 0, 0};
    const outputs *full = ref ? ref->full : NULL;
    const row_sample *sample = full || !ref ? NULL : ref->rows;
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
    outputs first = {0}, after = {0}, sref = {0};
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
             outputs_download(&d, &first);
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
    if (sample && backward && !sample_backward(sample, &d, in, &sref)) {
        snprintf(m->why, sizeof m->why, "%s: no memory for the sampled reference", s->name);
        goto done;
    }
    const outputs *against = full ? full : sample ? (backward ? &sref : &sample->fwd) : NULL;
    if (against) {
        if (full)
            snprintf(m->against, sizeof m->against, "step 00 on the same inputs (GPU)");
        else
            snprintf(m->against, sizeof m->against, "%d sampled %s rows per head (fp64 CPU)",
                     sample->nq, backward ? "query and key" : "query");
        const int close = outputs_close(&first, against, sample, p->dtype,
                                        full ? STEP00_SCALE : 1.0, p, &m->diff);
        if (close < 0) {
            snprintf(m->why, sizeof m->why, "%s: out of host memory for the check", s->name);
            goto done;
        }
        if (!close) {
            const ref_diff *x = &m->diff;
            verdict = s->known_bug && s->known_bug(p) ? M_XFAIL : M_WRONG;
            snprintf(m->why, sizeof m->why, "%s: %s differs from %s by rel-L2 %.2e (bound %.0e), "
                     "worst block (b %d, h %d, tile %d) %.2e (bound %.0e)", s->name, x->tensor,
                     m->against, x->err, x->bound, x->block_b, x->block_h, x->block_tile,
                     x->block_err, x->block_bound);
        }
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
    if (!outputs_download(&d, &after)) {
        snprintf(m->why, sizeof m->why, "%s: download after timing failed", s->name);
        goto done;
    }
    ref_diff x;
    const int same = outputs_close(&after, &first, NULL, p->dtype, 1.0, p, &x);
    if (same < 0) {
        snprintf(m->why, sizeof m->why, "%s: out of host memory for the check", s->name);
        goto done;
    }
    if (!same) {
        m->status = M_CHANGED;
        snprintf(m->why, sizeof m->why, "%s: %s after the timing loop differs from the checked run's "
                 "by rel-L2 %.2e (bound %.0e), worst block (b %d, h %d, tile %d) %.2e (bound %.0e)%s",
                 s->name, x.tensor, x.err, x.bound, x.block_b, x.block_h, x.block_tile, x.block_err,
                 x.block_bound, isfinite(x.err) ? "" : ": NaN or Inf");
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
    outputs_free(&sref);
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
