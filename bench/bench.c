/* bench.c: `attn run` (one checked, timed measurement) and `attn bench` (the sweeps).
 *
 * Method, the same for every step and in bench/peer_sdpa.py for the SDPA peers:
 *   one checked run first (outputs poisoned with NaN, then checked finite and, where a
 *   reference exists, against it; it doubles as the warm-up), then `reps` timed runs, each
 *   after rewriting a 2 x L2 buffer so no run finds its inputs in cache, CUDA events around
 *   the launch alone; the median is reported with min and max; the outputs are checked finite
 *   again after the timing loop. No allocation happens inside the timed region.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness.h"

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

/* The outputs of one pass: O and lse, or dQ, dK and dV. */
typedef struct {
    int count;
    const char *name[3];
    size_t n[3];
    double *x[3];
} outputs;

static void outputs_free(outputs *o)
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
        float *h = malloc(out->n[i] * sizeof(float));
        out->x[i] = malloc(out->n[i] * sizeof(double));
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

/* Largest rel-L2 of got against ref over the tensors; NaN if anything is not finite. */
static double outputs_error(const outputs *got, const outputs *ref, const char **worst)
{
    double e = 0.0;
    *worst = got->name[0];
    for (int i = 0; i < got->count; i++) {
        float *g = malloc(got->n[i] * sizeof(float));
        if (!g)
            return NAN;
        for (size_t j = 0; j < got->n[i]; j++)
            g[j] = (float)got->x[i][j];
        attn_err err = attn_compare(ref->x[i], g, got->n[i]);
        free(g);
        if (!(err.rel_l2 <= e)) {
            e = err.rel_l2;
            *worst = got->name[i];
        }
    }
    return e;
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

/* Does the problem fit the GPU's free memory? If not, a one-line reason. */
static int fits(const attn_step *s, const attn_problem *p, int backward, char *msg, size_t n)
{
    size_t free_b = 0, total_b = 0;
    if (!cuda_ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"))
        return 0;
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

/* xfail: wrong against the reference, as the step itself declares (known_bug, step 01's padded
 * keys): the time is real and reported, the answer is not. */
typedef enum { M_OK, M_UNSUPPORTED, M_OOM, M_WRONG, M_XFAIL, M_ERROR } m_status;
static const char *m_status_name[] = {"ok", "unsupported", "oom", "wrong", "xfail", "error"};

typedef struct {
    m_status status;
    char why[320];
    timing t;
    double tflops;
    size_t ws_bytes;
    double err;            /* against the reference, NAN when there was none */
    const char *err_tensor;
} measurement;

/* Runs `s` on the inputs; `ref` (may be NULL) are outputs to compare with; `keep` (may be NULL)
 * receives this run's outputs. reps <= 0 means adaptive. */
static void measure(const attn_step *s, const host_inputs *in, int backward, const outputs *ref,
                    double ref_bound, int reps, gpu_timer *timer, outputs *keep, measurement *m)
{
    const attn_problem *p = &in->p;
    memset(m, 0, sizeof *m);
    m->err = NAN;
    const char *why = NULL;
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
    if (!fits(s, p, backward, m->why, sizeof m->why)) {
        m->status = M_OOM;
        return;
    }
    devbufs d;
    if (!db_alloc(&d, in, backward, m->ws_bytes)) {
        m->status = M_OOM;
        snprintf(m->why, sizeof m->why, "%s: device allocation failed", s->name);
        cudaGetLastError();
        return;
    }
    launch_ctx ctx = {s, &d};
    launch_fn fn = backward ? launch_bwd : launch_fwd;
    const size_t e = attn_dtype_bytes(p->dtype);
    outputs got = {0};
    attn_status st = ATTN_OK;
    float first_ms = 0.f;
    m->status = M_ERROR;
    if (backward)   /* O and lse come from the step's own forward, untimed */
        st = launch_fwd(&ctx, timer->stream);
    int ok = st == ATTN_OK &&
             (backward ? dev_poison(d.dq, in->n_q * e) && dev_poison(d.dk, in->n_kv * e) &&
                             dev_poison(d.dv, in->n_kv * e)
                       : dev_poison(d.o, in->n_q * e) && dev_poison(d.lse, in->n_lse * 4)) &&
             cuda_ok(cudaEventRecord(timer->start, timer->stream), "cudaEventRecord");
    if (ok) {
        st = fn(&ctx, timer->stream);
        ok = st == ATTN_OK && cuda_ok(cudaEventRecord(timer->stop, timer->stream), "cudaEventRecord") &&
             cuda_ok(cudaEventSynchronize(timer->stop), s->name) &&
             cuda_ok(cudaEventElapsedTime(&first_ms, timer->start, timer->stop), "elapsed") &&
             outputs_download(&d, in, &got);
    }
    if (!ok) {
        snprintf(m->why, sizeof m->why, "%s: the checked run failed (status %d)", s->name, (int)st);
        goto done;
    }
    if (!outputs_finite(&got)) {
        m->status = M_WRONG;
        snprintf(m->why, sizeof m->why, "%s: NaN or Inf in the outputs of the checked run", s->name);
        goto done;
    }
    if (ref) {
        m->err = outputs_error(&got, ref, &m->err_tensor);
        if (!(m->err <= ref_bound)) {
            m->status = s->known_bug && s->known_bug(p) ? M_XFAIL : M_WRONG;
            snprintf(m->why, sizeof m->why, "%s: %s differs from the reference by rel-L2 %.2e (bound %.0e)",
                     s->name, m->err_tensor, m->err, ref_bound);
        }
    }
    if (reps <= 0)
        reps = timer_reps(first_ms, 200.0, 3, 30);
    st = timer_run(timer, fn, &ctx, reps, &m->t);
    if (st != ATTN_OK) {
        m->status = M_ERROR;
        m->t.reps = 0;
        snprintf(m->why, sizeof m->why, "%s: a timed run failed (status %d)", s->name, (int)st);
        goto done;
    }
    m->tflops = attn_flops(p, backward) / (m->t.median_ms * 1e-3) / 1e12;
    outputs_free(&got);
    if (!outputs_download(&d, in, &got)) {
        snprintf(m->why, sizeof m->why, "%s: download after timing failed", s->name);
        goto done;
    }
    if (!outputs_finite(&got)) {
        m->status = M_WRONG;
        snprintf(m->why, sizeof m->why, "%s: NaN or Inf in the outputs after the timing loop", s->name);
        goto done;
    }
    if (m->status == M_ERROR)
        m->status = M_OK;
    if (keep) {
        *keep = got;
        memset(&got, 0, sizeof got);
    }
done:
    if (m->status == M_ERROR && !m->why[0])
        snprintf(m->why, sizeof m->why, "%s failed", s->name);
    outputs_free(&got);
    db_free(&d);
}

/* The GPU's facts, and a stream with a timer (and its L2 flush buffer) on it. */
static int gpu_setup(gpu_info *g, gpu_timer *timer)
{
    cudaStream_t stream;
    return gpu_query(g) && cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate") &&
           timer_init(timer, stream);
}

static void gpu_teardown(gpu_timer *timer)
{
    cudaStream_t stream = timer->stream;
    timer_free(timer);
    cudaStreamDestroy(stream);
}

/* ------------------------------------------------------------------------------ attn run */

static int usage_run(const char *msg)
{
    fprintf(stderr, "attn run: %s; attn --help shows the options\n", msg);
    return 2;
}

int cmd_run(int argc, char **argv, const loaded_step *steps, int nsteps)
{
    const attn_step *s = NULL;
    attn_problem p;
    int have_shape = 0, backward = 0, causal = 0, reps = 0;
    attn_dtype dtype = ATTN_FP32;
    input_mode mode = INPUT_NORMAL;
    uint64_t seed = (uint64_t)time(NULL);
    char err[256];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (strcmp(a, "--causal") == 0)
            causal = 1;
        else if (strcmp(a, "--backward") == 0)
            backward = 1;
        else if (!v)
            return usage_run(strncmp(a, "--", 2) == 0 ? "an option is missing its value" : "unexpected argument");
        else if (strcmp(a, "--step") == 0) {
            if (!(s = steps_find(steps, nsteps, v))) {
                snprintf(err, sizeof err, "unknown step '%s' (attn list shows them)", v);
                return usage_run(err);
            }
            i++;
        } else if (strcmp(a, "--shape") == 0) {
            if (!parse_shape(v, &p, err, sizeof err))
                return usage_run(err);
            have_shape = 1;
            i++;
        } else if (strcmp(a, "--dtype") == 0) {
            if (!parse_dtype(v, &dtype)) {
                snprintf(err, sizeof err, "unknown dtype '%s' (fp32 or bf16)", v);
                return usage_run(err);
            }
            i++;
        } else if (strcmp(a, "--inputs") == 0) {
            if (strcmp(v, "normal") == 0) mode = INPUT_NORMAL;
            else if (strcmp(v, "large") == 0) mode = INPUT_LARGE;
            else if (strcmp(v, "late") == 0) mode = INPUT_LATE;
            else return usage_run("--inputs is normal, large or late");
            i++;
        } else if (strcmp(a, "--seed") == 0) {
            if (!parse_u64(v, &seed))
                return usage_run("--seed takes a whole number >= 0");
            i++;
        } else if (strcmp(a, "--reps") == 0) {
            if (!parse_long(v, 1, 100000, &n))
                return usage_run("--reps takes a whole number from 1 to 100000");
            reps = (int)n;
            i++;
        } else {
            snprintf(err, sizeof err, "unknown option '%s'", a);
            return usage_run(err);
        }
    }
    if (!s || !have_shape)
        return usage_run("--step and --shape are required");
    p.dtype = dtype;
    p.causal = causal;
    char why[320], shape[64];
    fmt_shape(&p, shape, sizeof shape);
    if (!gpu_available(why, sizeof why))
        return fprintf(stderr, "attn: %s\n", why), 2;
    const char *reason = NULL;
    if (backward && !s->backward)
        return fprintf(stderr, "attn: %s is forward only\n", s->name), 2;
    if (s->supports(&p, backward, &reason) != ATTN_OK)
        return fprintf(stderr, "attn: %s does not support %s %s: %s\n", s->name, shape,
                       dtype_name(dtype), reason ? reason : "no reason given"), 2;
    if (!fits(s, &p, backward, why, sizeof why))
        return fprintf(stderr, "attn: %s\n", why), 2;

    gpu_info g;
    gpu_timer timer;
    if (!gpu_setup(&g, &timer))
        return 2;
    printf("step       %s\n", s->name);
    printf("problem    B=%d H=%d Nq=%d Nk=%d D=%d %s %s, scale %.6g, %s, %s inputs, seed %llu\n",
           p.batch, p.heads, p.seq_q, p.seq_k, p.head_dim, dtype_name(dtype),
           causal ? "causal" : "non-causal", p.scale, backward ? "backward" : "forward",
           input_mode_name(mode), (unsigned long long)seed);
    printf("gpu        %s\n", g.name);

    /* The reference: fp64 on the CPU when that takes seconds, else step 00 where it fits. */
    const double cpu_work = (double)p.batch * p.heads * visible_pairs(&p) * p.head_dim;
    int rc = 0;
    host_inputs in;
    outputs ref = {0};
    double bound = check_bound(dtype, "O");
    const char *ref_name = "none (too big for the CPU and for step 00): outputs checked finite only";
    check_case c = {0};
    if (cpu_work <= 2e9) {
        if (!case_prepare(&c, &p, mode, seed, backward))
            return 2;
        check_result r;
        if (!case_run(&c, s, backward, timer.stream, &r))
            return 2;
        printf("check      vs the fp64 CPU reference:");
        for (int t = 0; t < r.n; t++)
            printf(" %s rel-L2 %.2e (bound %.0e)", r.t[t].name, r.t[t].err.rel_l2, r.t[t].bound);
        printf(" -> %s%s%s\n", verdict_name(r.v), r.why ? ": " : "", r.why ? r.why : "");
        if (r.v == V_FAIL) {
            check_print_failure(stdout, &c, &r, s->name, backward);
            rc = 1;
        }
        in = c.in;
        ref.count = backward ? 3 : 2;
        ref.x[0] = backward ? c.dq : c.o;
        ref.x[1] = backward ? c.dk : c.lse;
        ref.x[2] = backward ? c.dv : NULL;
        ref_name = NULL;
        bound = INFINITY;   /* already judged above, with XFAIL where that applies */
    } else {
        if (!inputs_make_fast(&in, &p, seed))
            return 2;
        const attn_step *s00 = steps_find(steps, nsteps, "0");
        char dummy[320];
        if (s00 && s00 != s && fits(s00, &p, backward, dummy, sizeof dummy)) {
            measurement m0;
            measure(s00, &in, backward, NULL, 0, 1, &timer, &ref, &m0);
            if (m0.status == M_OK)
                ref_name = "step 00 (the materialized baseline) on the same inputs";
            bound = 2 * check_bound(dtype, backward ? "dQ" : "O");   /* two approximations apart */
        }
    }
    measurement m;
    measure(s, &in, backward, ref.count ? &ref : NULL, bound, reps, &timer, NULL, &m);
    if (ref_name) {
        printf("check      vs %s", ref_name);
        if (!isnan(m.err))
            printf(": worst rel-L2 %.2e (%s, bound %.0e)", m.err, m.err_tensor, bound);
        printf("\n");
    }
    if (m.status != M_OK) {
        printf("result     %s: %s\n", m_status_name[m.status], m.why);
        rc = m.status == M_WRONG ? 1 : 2;
    } else {
        char ws[32];
        fmt_bytes((double)m.ws_bytes, ws, sizeof ws);
        printf("time       %.4f ms median (min %.4f, max %.4f; %d runs, L2 flushed before each)\n",
               m.t.median_ms, m.t.min_ms, m.t.max_ms, m.t.reps);
        printf("rate       %.2f TFLOP/s (%.3g FLOP)\n", m.tflops, attn_flops(&p, backward));
        printf("workspace  %s (%zu bytes)\n", ws, m.ws_bytes);
    }
    if (c.o)
        case_free(&c);
    else {
        inputs_free(&in);
        outputs_free(&ref);
    }
    gpu_teardown(&timer);
    return rc;
}

/* ------------------------------------------------------------------------- attn bench */

typedef struct {
    attn_problem p;
    int backward;
} config;

/* The blog sweep: bf16, B=4, H=8, D in {64, 128}, causal and not, N = 512..16384, forward and
 * backward; then N = 32768 forward, non-causal, where step 00 stops fitting. */
static int sweep_blog(config *out, int max, int quick)
{
    static const int ns[] = {512, 1024, 2048, 4096, 8192, 16384};
    int n = 0;
    for (int di = 0; di < 2; di++) {
        const int d = di ? 128 : 64;
        for (int causal = 0; causal < 2; causal++)
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
                for (int bwd = 0; bwd < 2; bwd++) {
                    if (quick && ns[i] != 1024 && ns[i] != 4096)
                        continue;
                    if (n < max)
                        out[n++] = (config){{4, 8, ns[i], ns[i], d, causal, ATTN_BF16,
                                             (float)(1.0 / sqrt(d))}, bwd};
                }
        if (!quick && n < max)
            out[n++] = (config){{4, 8, 32768, 32768, d, 0, ATTN_BF16, (float)(1.0 / sqrt(d))}, 0};
    }
    return n;
}

/* The seed-1 sweep: fp32, one head, (M, N, D), forward. */
static int sweep_seed1(config *out, int max)
{
    static const int shapes[][3] = {{7, 13, 8}, {35, 67, 32}, {64, 129, 128}, {1024, 4096, 64},
                                    {1024, 4096, 128}};
    int n = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && n < max; i++)
        out[n++] = (config){{1, 1, shapes[i][0], shapes[i][1], shapes[i][2], 0, ATTN_FP32,
                             (float)(1.0 / sqrt(shapes[i][2]))}, 0};
    return n;
}

static void fmt_duration(double s, char *out, size_t n)
{
    if (s < 60)
        snprintf(out, n, "%.0fs", s);
    else
        snprintf(out, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int usage_bench(const char *msg)
{
    fprintf(stderr, "attn bench: %s; attn --help shows the options\n", msg);
    return 2;
}

int cmd_bench(int argc, char **argv, const loaded_step *steps, int nsteps)
{
    const char *sweep = NULL, *out_path = NULL;
    const attn_step *sel[MAX_STEPS];
    int nsel = 0, quick = 0, reps = 0;
    char err[256];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (strcmp(a, "--quick") == 0)
            quick = 1;
        else if (!v)
            return usage_bench("an option is missing its value, or an argument is unknown");
        else if (strcmp(a, "--sweep") == 0) {
            sweep = v;
            i++;
        } else if (strcmp(a, "--out") == 0) {
            out_path = v;
            i++;
        } else if (strcmp(a, "--reps") == 0) {
            if (!parse_long(v, 1, 100000, &n))
                return usage_bench("--reps takes a whole number from 1 to 100000");
            reps = (int)n;
            i++;
        } else if (strcmp(a, "--steps") == 0) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", v);
            char *save = NULL;
            for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                const attn_step *s = steps_find(steps, nsteps, t);
                if (!s) {
                    snprintf(err, sizeof err, "unknown step '%s' (attn list shows them)", t);
                    return usage_bench(err);
                }
                if (nsel < MAX_STEPS)
                    sel[nsel++] = s;
            }
            i++;
        } else {
            snprintf(err, sizeof err, "unknown option '%s'", a);
            return usage_bench(err);
        }
    }
    config cfg[128];
    int ncfg;
    if (sweep && strcmp(sweep, "blog") == 0)
        ncfg = sweep_blog(cfg, 128, quick);
    else if (sweep && strcmp(sweep, "seed1") == 0)
        ncfg = sweep_seed1(cfg, 128);
    else
        return usage_bench("--sweep is blog or seed1");
    if (nsel == 0)
        for (int i = 0; i < nsteps; i++)
            sel[nsel++] = steps[i].info;
    char why[256];
    if (!gpu_available(why, sizeof why))
        return fprintf(stderr, "attn: %s\n", why), 2;
    FILE *out = stdout;
    if (out_path && !(out = fopen(out_path, "w")))
        return fprintf(stderr, "attn: cannot write %s\n", out_path), 2;
    gpu_info g;
    gpu_timer timer;
    if (!gpu_setup(&g, &timer))
        return 2;
    fprintf(out, "gpu,step,pass,dtype,batch,heads,seq_q,seq_k,head_dim,causal,ms_median,ms_min,"
                 "ms_max,tflops,workspace_bytes,status\n");
    const attn_step *s00 = steps_find(steps, nsteps, "0");

    /* Progress: work is counted in FLOPs, so the estimate of what remains weighs big shapes. */
    double total_work = 0, done_work = 0;
    for (int c = 0; c < ncfg; c++)
        total_work += nsel * attn_flops(&cfg[c].p, cfg[c].backward);
    const double t0 = now_s();
    int rows = 0, bad_rows = 0, fatal = 0;
    for (int c = 0; c < ncfg && !fatal; c++) {
        const attn_problem *p = &cfg[c].p;
        const int bwd = cfg[c].backward;
        int any = 0;
        for (int s = 0; s < nsel; s++)
            any |= !bwd || sel[s]->backward != NULL;
        if (!any)
            continue;
        host_inputs in;
        if (!inputs_make_fast(&in, p, 0x5eed0000ull + (uint64_t)c)) {
            fatal = 1;
            break;
        }
        /* Step 00 on the same inputs is the spot-check reference wherever it fits. */
        outputs ref = {0};
        char dummy[320];
        if (s00 && fits(s00, p, bwd, dummy, sizeof dummy)) {
            measurement m0;
            measure(s00, &in, bwd, NULL, 0, 1, &timer, &ref, &m0);
            if (m0.status != M_OK)
                outputs_free(&ref);
        }
        for (int s = 0; s < nsel && !fatal; s++) {
            measurement m;
            measure(sel[s], &in, bwd, ref.count ? &ref : NULL, 2 * check_bound(p->dtype, bwd ? "dQ" : "O"),
                    reps, &timer, NULL, &m);
            fprintf(out, "%s,%s,%s,%s,%d,%d,%d,%d,%d,%d,", g.name, sel[s]->name, bwd ? "bwd" : "fwd",
                    dtype_name(p->dtype), p->batch, p->heads, p->seq_q, p->seq_k, p->head_dim,
                    p->causal);
            if (m.t.reps)
                fprintf(out, "%.4f,%.4f,%.4f,%.2f,", m.t.median_ms, m.t.min_ms, m.t.max_ms, m.tflops);
            else
                fprintf(out, ",,,,");
            fprintf(out, "%zu,%s\n", m.ws_bytes, m_status_name[m.status]);
            fflush(out);
            rows++;
            done_work += attn_flops(p, bwd);
            const double el = now_s() - t0;
            char e1[32], e2[32];
            fmt_duration(el, e1, sizeof e1);
            fmt_duration(done_work > 0 ? el * (total_work - done_work) / done_work : 0, e2, sizeof e2);
            fprintf(stderr, "[%3d/%3d] %-24s %s %s D=%-3d N=%-5d %s: ", c + 1, ncfg, sel[s]->name,
                    bwd ? "bwd" : "fwd", dtype_name(p->dtype), p->head_dim, p->seq_k,
                    p->causal ? "causal    " : "non-causal");
            if (m.t.reps)
                fprintf(stderr, "%9.3f ms %8.2f TFLOP/s%s%s", m.t.median_ms, m.tflops,
                        m.status == M_OK ? "" : "  ", m.status == M_OK ? "" : m_status_name[m.status]);
            else
                fprintf(stderr, "%s (%s)", m_status_name[m.status], m.why);
            fprintf(stderr, "  [elapsed %s, ~%s left]\n", e1, e2);
            if (m.status == M_WRONG || m.status == M_ERROR)
                bad_rows++;
            if (m.status == M_ERROR && cudaGetLastError() != cudaSuccess) {
                fprintf(stderr, "attn bench: the CUDA context is broken; stopping\n");
                fatal = 1;
            }
        }
        outputs_free(&ref);
        inputs_free(&in);
    }
    if (out != stdout)
        fclose(out);
    gpu_teardown(&timer);
    fprintf(stderr, "attn bench: %d rows%s%s in %.0f s; %d wrong or failed\n", rows,
            out_path ? " to " : "", out_path ? out_path : "", now_s() - t0, bad_rows);
    return fatal ? 2 : bad_rows ? 1 : 0;
}
