/* GPU tests: every step found, on the whole grid, against the fp64 reference; plus the cases
 * that say something on their own (step 01's bug, the worked example, bad input, misaligned
 * pointers, repeatability, two streams at once). Every step folder of the source tree must
 * have loaded. Without a GPU each test skips with a message naming why, and the run ends with
 * one line that counts the skips. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "run_attn.h"

static loaded_step steps[MAX_STEPS];
static int nsteps;

static void need_gpu(void)
{
    char why[256], err[512];
    if (!gpu_available(why, sizeof why))
        cr_skip_test("GPU test skipped: %s", why);
    nsteps = steps_load(steps, MAX_STEPS, err, sizeof err);
    cr_assert(nsteps > 0, "%s", err);
}

/* The loader's complaints, one per .so that did not load, for a failure message. */
static const char *load_errors(void)
{
    static char buf[2048];
    const step_load_error *le;
    const int n = steps_load_errors(&le);
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "; %s does not load: %s", le[i].file,
                                le[i].error);
    return n ? buf : "; no .so failed to load (was it built?)";
}

/* A step a test needs: missing is a failure, never a skip (a step that did not build must not
 * turn its tests green). */
static const attn_step *step(const char *spec)
{
    const attn_step *s = steps_find(steps, nsteps, spec);
    if (!s)
        cr_assert_fail("step %s is not loaded%s", spec, load_errors());
    return s;
}

static int gpu_cc(void)
{
    gpu_info g;
    cr_assert(gpu_query(&g));
    return g.cc_major * 10 + g.cc_minor;
}

/* ---------------------------------------------------------- every step of the source is here */

static int is_file(const char *path, int dir)
{
    struct stat st;
    return stat(path, &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* The step folders of the source tree (steps/NN_name/attention.cu), sorted; the tree is the one
 * this binary was built from (build/tests/gpu: two folders up), else the current directory
 * (`make test` runs from the root). A folder is the tree when it holds common/attention.h and
 * steps/. Returns the count, or -1 when no tree is found (root then says where it looked). */
static int source_steps(char (*names)[128], int max, char *root, size_t rootn)
{
    char exe[PATH_MAX - 16], cand[2][PATH_MAX], path[3 * PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    snprintf(cand[0], sizeof cand[0], "%s/../..", exe);
    if (!getcwd(cand[1], sizeof cand[1]))
        snprintf(cand[1], sizeof cand[1], ".");
    for (int c = 0; c < 2; c++) {
        snprintf(path, sizeof path, "%s/common/attention.h", cand[c]);
        if (!is_file(path, 0))
            continue;
        snprintf(path, sizeof path, "%s/steps", cand[c]);
        DIR *d = opendir(path);
        if (!d)
            continue;
        if (!realpath(cand[c], root))
            snprintf(root, rootn, "%s", cand[c]);
        int n = 0;
        for (struct dirent *e; (e = readdir(d)) && n < max;) {
            const size_t len = strlen(e->d_name);
            if (e->d_name[0] == '.' || len >= sizeof names[0])
                continue;
            snprintf(path, sizeof path, "%s/steps/%s/attention.cu", cand[c], e->d_name);
            if (is_file(path, 0))
                memcpy(names[n++], e->d_name, len + 1);
        }
        closedir(d);
        qsort(names, (size_t)n, sizeof names[0], cmp_str);
        return n;
    }
    snprintf(root, rootn, "%s and %s", cand[0], cand[1]);
    return -1;
}

/* The grid runs the steps that loaded; this is what makes a step that did not build, or does not
 * load, a failure instead of a silent gap in the grid. */
Test(gpu, every_step_folder_of_the_source_is_loaded)
{
    need_gpu();
    char names[MAX_STEPS][128], root[2 * PATH_MAX + 8];
    const int n = source_steps(names, MAX_STEPS, root, sizeof root);
    cr_assert(n > 0, "no steps/NN_name/attention.cu found in %s (run the tests from the source "
              "tree, or keep them in its build/tests)", root);
    int missing = 0;
    for (int i = 0; i < n; i++) {
        const attn_step *s = steps_find(steps, nsteps, names[i]);
        if (!s) {
            missing++;
            cr_log_error("steps/%s/attention.cu has no loaded step %s", names[i], names[i]);
        }
    }
    cr_expect(missing == 0, "%d of the %d step folders of %s did not load%s", missing, n, root,
              load_errors());
    /* the other way: a loaded step with no folder is a stale build (a renamed or removed step) */
    for (int i = 0; i < nsteps; i++) {
        int found = 0;
        for (int j = 0; j < n && !found; j++)
            found = strcmp(steps[i].info->name, names[j]) == 0;
        if (!found)
            cr_log_warn("%s is loaded but %s/steps has no folder of that name (a stale build?)",
                        steps[i].info->name, root);
    }
    cr_log_info("%d step folders in %s, %d steps loaded", n, root, nsteps);
}

/* ------------------------------------------------------------------------- the grid */

/* All steps, forward and backward, on every shape, dtype and causal setting of the grid; one
 * test per input mode so they run in parallel. Fresh random data each time: the seed is
 * printed with any failure (and the command that reproduces it). */
static void grid(input_mode mode)
{
    need_gpu();
    const attn_step *sel[MAX_STEPS];
    for (int i = 0; i < nsteps; i++)
        sel[i] = steps[i].info;
    const uint64_t seed = (uint64_t)time(NULL) * 1000003u + (uint64_t)mode;
    check_set_gpu_reference(steps_find(steps, nsteps, "00"));
    char *log = NULL;
    size_t loglen = 0;
    FILE *f = open_memstream(&log, &loglen);
    check_totals t;
    int ok = check_run_all(sel, nsteps, mode, seed, f, NULL, &t);
    fclose(f);
    /* Print the failures (and the summary) so a red test explains itself. */
    int show = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, " FAIL") && line[0] != ' ')
            show = 1;
        else if (line[0] != ' ')
            show = strncmp(line, "summary", 7) == 0 || show == 2 ? 2 : 0;
        if (show)
            cr_log_info("%s", line);
    }
    free(log);
    cr_assert(ok, "the harness failed (seed %llu)", (unsigned long long)seed);
    cr_expect(t.count[V_FAIL] == 0, "%d failing cases with %s inputs (seed %llu)", t.count[V_FAIL],
              input_mode_name(mode), (unsigned long long)seed);
    cr_expect(t.count[V_PASS] > 0, "nothing passed");
    /* A step built for this GPU that ran no case at all is a broken step or a broken grid, not
     * a pass. */
    gpu_info g;
    cr_assert(gpu_query(&g));
    for (int i = 0; i < nsteps; i++) {
        const char *why;
        if (attn_gpu_fits(sel[i], g.cc_major * 10 + g.cc_minor, &why))
            cr_expect(t.ran[i] > 0, "%s fits this GPU (cc %d.%d) but ran no case of the grid",
                      sel[i]->name, g.cc_major, g.cc_minor);
    }
}

Test(gpu, grid_normal_inputs, .timeout = 600) { grid(INPUT_NORMAL); }
Test(gpu, grid_large_scores, .timeout = 600) { grid(INPUT_LARGE); }
Test(gpu, grid_late_maximum, .timeout = 600) { grid(INPUT_LATE); }
Test(gpu, grid_far_from_zero, .timeout = 600) { grid(INPUT_FAR); }

/* ----------------------------------------------------------------- step 01's bug, and 02's fix */

static check_result run_case(const attn_step *s, attn_problem p, input_mode mode, uint64_t seed)
{
    check_case c;
    check_result r;
    cr_assert(case_prepare(&c, &p, mode, seed, 0));
    cr_assert(case_run(&c, s, 0, 0, &r));
    case_free(&c);
    return r;
}

Test(gpu, step01_is_wrong_on_ragged_keys_and_step02_is_not)
{
    need_gpu();
    const attn_step *s01 = step("01"), *s02 = step("02");
    const uint64_t seed = (uint64_t)time(NULL);
    for (int t = 0; t < 2; t++) {
        /* the batched shape (2, 100, 100, 64) of the check grid: 100 = 6 * 16 + 4, so 12 zero keys leak into every row */
        attn_problem ragged = {2, 1, 100, 100, 64, 0, t ? ATTN_BF16 : ATTN_FP32, 0.125f, 1, 0};
        attn_problem even = ragged;
        even.seq_q = even.seq_k = 128;
        check_result r = run_case(s01, ragged, INPUT_NORMAL, seed);
        cr_expect(r.v == V_XFAIL, "step 01 on 2,1,100,100,64 %s: %s, expected XFAIL", dtype_name(t),
                  verdict_name(r.v));
        /* the 12 zero keys carry exp(0 - m) each against ~100 real keys: several % of O */
        cr_expect(r.t[0].err.rel_l2 > 0.03,
                  "step 01 is only %.2e wrong on ragged keys (bound %.0e): was the bug fixed?",
                  r.t[0].err.rel_l2, r.t[0].bound);
        r = run_case(s01, even, INPUT_NORMAL, seed);
        cr_expect(r.v == V_PASS, "step 01 on 2,1,128,128,64 %s: %s", dtype_name(t), verdict_name(r.v));
        r = run_case(s02, ragged, INPUT_NORMAL, seed);
        cr_expect(r.v == V_PASS, "step 02 on 2,1,100,100,64 %s: %s (O %.2e)", dtype_name(t),
                  verdict_name(r.v), r.t[0].err.rel_l2);
        /* causal hides the padding from rows i < Nk: step 01 is right there when Nq <= Nk */
        ragged.causal = 1;
        r = run_case(s01, ragged, INPUT_NORMAL, seed);
        cr_expect(r.v == V_PASS, "step 01 causal 2,1,100,100,64: %s", verdict_name(r.v));
    }
}

/* The worked example through the kernels: one query, keys scoring [1, 2, 3], values
 * [10, 20, 30], D = 1 (padded to 16 inside). Step 02 gives 25.752. Step 01 lets the 13 zero
 * keys of its 16-key tile in, each with weight exp(0 - 3): 38.711 / (1.503 + 13 e^-3) = 18.00. */
Test(gpu, worked_example_through_the_kernels)
{
    need_gpu();
    attn_problem p = {1, 1, 1, 3, 1, 0, ATTN_FP32, 1.f, 1, 0};
    const float q = 1.f, k[3] = {1.f, 2.f, 3.f}, v[3] = {10.f, 20.f, 30.f};
    void *dq, *dk, *dv, *dout, *dlse;
    cr_assert(dev_alloc(&dq, 4, "q") && dev_alloc(&dk, 12, "k") && dev_alloc(&dv, 12, "v") &&
              dev_alloc(&dout, 4, "o") && dev_alloc(&dlse, 4, "lse"));
    cr_assert(dev_upload(dq, &q, 1, ATTN_FP32) && dev_upload(dk, k, 3, ATTN_FP32) &&
              dev_upload(dv, v, 3, ATTN_FP32));
    /* each output against the exact value (fp32 math: 1e-4) and against the hand-worked figure
     * the comment above (and the README) quotes, within half a unit of its last digit */
    const double num = 10 * exp(-2.0) + 20 * exp(-1.0) + 30, den = exp(-2.0) + exp(-1.0) + 1;
    const struct { const char *step; double exact, figure, half_unit; } cases[] = {
        {"00", num / den, 25.752, 5e-4},
        {"02", num / den, 25.752, 5e-4},
        {"01", num / (den + 13 * exp(-3.0)), 18.00, 5e-3}};
    for (int i = 0; i < 3; i++) {
        const attn_step *s = step(cases[i].step);
        void *ws = NULL;
        cr_assert(dev_alloc(&ws, s->workspace_bytes(&p, 0), "workspace"));
        cr_assert(dev_poison(dout, 4) && dev_poison(dlse, 4));
        cr_assert_eq(s->forward(&p, dq, dk, dv, dout, dlse, ws, 0), ATTN_OK);
        float o;
        cr_assert(dev_download(&o, dout, 1, ATTN_FP32));
        cr_expect(fabs(o - cases[i].exact) < 1e-4, "%s: output %.6f, exactly %.6f", s->name, o,
                  cases[i].exact);
        cr_expect(fabs(o - cases[i].figure) < cases[i].half_unit,
                  "%s: output %.6f, the worked example says %g", s->name, o, cases[i].figure);
        cudaFree(ws);
    }
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dlse);
}

/* --------------------------------------------------------------------- the front door */


/* With a GPU present: a shape the step cannot do, and a workspace no GPU holds, are one line and
 * exit 2; a good run prints its time and passes its check. */
Test(gpu, attn_run_refuses_clearly_and_measures, .timeout = 300)
{
    need_gpu();
    char out[8192];
    int rc = run_attn("run --step 01 --shape 1,1,64,64,256 --dtype bf16", out, sizeof out);
    cr_expect(rc == 2 && strstr(out, "does not support") && strstr(out, "head_dim above 128"),
              "exit %d: %s", rc, out);
    rc = run_attn("run --step 00 --shape 4,8,65536,65536,64 --dtype bf16", out, sizeof out);
    cr_expect(rc == 2 && strstr(out, "00_materialized needs") && strstr(out, "GiB of workspace for 4,8,65536,65536,64") &&
                  strstr(out, "free"), "exit %d: %s", rc, out);
    cr_expect(!strchr(strchr(out, '\n') + 1, '\n'), "more than one line: %s", out);
    rc = run_attn("run --step 01 --shape 1,1,8,8,64 --backward", out, sizeof out);
    cr_expect(rc == 2 && strstr(out, "forward only"), "exit %d: %s", rc, out);
    rc = run_attn("run --step 02 --shape 2,2,300,200,64 --dtype bf16 --causal", out, sizeof out);
    cr_expect(rc == 0 && strstr(out, "PASS") && strstr(out, "TFLOP/s"), "exit %d: %s", rc, out);
    rc = run_attn("run --step 00 --shape 2,2,300,200,64 --dtype bf16 --backward", out, sizeof out);
    cr_expect(rc == 0 && strstr(out, "PASS") && strstr(out, "TFLOP/s"), "exit %d: %s", rc, out);
    rc = run_attn("run --step 01 --shape 2,1,100,100,64", out, sizeof out);
    cr_expect(rc == 0 && strstr(out, "XFAIL"), "step 01 on ragged keys: exit %d: %s", rc, out);
    /* too big for the CPU reference: checked against step 00 instead */
    rc = run_attn("run --step 02 --shape 1,4,4096,4096,64 --dtype bf16 --reps 3", out, sizeof out);
    cr_expect(rc == 0 && strstr(out, "vs step 00") && strstr(out, "TFLOP/s"), "exit %d: %s", rc, out);
}

/* ------------------------------------------------------------------ misaligned pointers */

/* The contract (attention.h): every tensor pointer 16-byte aligned, the workspace 256-byte. A
 * pointer 2 bytes off (a bf16 view that starts one element into a buffer) must come back as
 * ATTN_ERR_INVALID from every step, forward and backward, on any GPU (the check comes before the
 * step asks which GPU it is on), and leave no CUDA error behind: a misaligned access would be a
 * sticky error that ends the process. Each case first runs aligned, so INVALID is the offset's
 * doing. */
enum { T_Q, T_K, T_V, T_O, T_LSE, T_DO, T_DQ, T_DK, T_DV, T_WS, T_N };
static const char *const tensor_names[T_N] = {"q", "k", "v", "o", "lse", "d_o", "dq", "dk",
                                              "dv", "workspace"};

static attn_status call_step(const attn_step *s, const attn_problem *p, int backward,
                             void *const t[T_N])
{
    return backward ? s->backward(p, t[T_Q], t[T_K], t[T_V], t[T_O], (const float *)t[T_LSE],
                                  t[T_DO], t[T_DQ], t[T_DK], t[T_DV], t[T_WS], 0)
                    : s->forward(p, t[T_Q], t[T_K], t[T_V], t[T_O], (float *)t[T_LSE], t[T_WS], 0);
}

static int cuda_clean(const char **what)
{
    const cudaError_t a = cudaGetLastError(), b = cudaDeviceSynchronize();
    *what = a != cudaSuccess ? cudaGetErrorString(a) : b != cudaSuccess ? cudaGetErrorString(b)
                                                                         : NULL;
    return a == cudaSuccess && b == cudaSuccess;
}

Test(gpu, every_step_refuses_a_misaligned_pointer, .timeout = 300)
{
    need_gpu();
    const int cc = gpu_cc();
    /* the first problem a step takes; at D = 128 not causal, 12 work tiles give step 11 a
     * workspace (stream-K's partials), so its offset is tested too */
    const attn_problem cand[] = {{1, 4, 300, 300, 128, 0, ATTN_BF16, 0.0884f, 4, 0},
                                 {1, 4, 300, 300, 64, 0, ATTN_BF16, 0.125f, 4, 0},
                                 {1, 4, 300, 300, 64, 0, ATTN_FP32, 0.125f, 4, 0},
                                 /* step 15 (decode, Nq <= 16): a workspace for up to 5 splits */
                                 {1, 4, 4, 300, 128, 0, ATTN_BF16, 0.0884f, 4, 0}};
    int calls = 0;
    for (int i = 0; i < nsteps; i++) {
        const attn_step *s = steps[i].info;
        const int fits = attn_gpu_fits(s, cc, NULL);
        for (int bwd = 0; bwd < 2; bwd++) {
            if (bwd && !s->backward)
                continue;
            const attn_problem *p = NULL;
            const char *why;
            for (size_t c = 0; c < sizeof cand / sizeof cand[0] && !p; c++)
                if (s->supports(&cand[c], bwd, &why) == ATTN_OK)
                    p = &cand[c];
            cr_assert(p, "%s supports none of the %s problems of this test", s->name,
                      bwd ? "backward" : "forward");
            const size_t e = attn_dtype_bytes(p->dtype);
            const size_t nq = (size_t)p->batch * p->heads * p->seq_q * p->head_dim;
            const size_t nkv = (size_t)p->batch * p->heads * p->seq_k * p->head_dim;
            const size_t nl = (size_t)p->batch * p->heads * p->seq_q;
            const size_t ws = s->workspace_bytes(p, bwd);
            const size_t bytes[T_N] = {nq * e, nkv * e, nkv * e, nq * e, nl * 4,
                                       bwd ? nq * e : 0, bwd ? nq * e : 0, bwd ? nkv * e : 0,
                                       bwd ? nkv * e : 0, ws};
            void *t[T_N] = {0};
            for (int j = 0; j < T_N; j++)
                if (bytes[j]) {   /* 256 bytes to spare: an offset pointer stays in bounds */
                    cr_assert(dev_alloc(&t[j], bytes[j] + 256, tensor_names[j]));
                    cr_assert(cuda_ok(cudaMemset(t[j], 0, bytes[j] + 256), "zero"));
                }
            /* aligned: it runs (or, on a GPU it does not fit, says UNSUPPORTED after the checks) */
            const char *err;
            attn_status st = call_step(s, p, bwd, t);
            int clean = cuda_clean(&err);
            cr_expect(clean && (st == ATTN_OK || (!fits && st == ATTN_ERR_UNSUPPORTED)),
                      "%s %s, all pointers aligned: status %d, %s", s->name,
                      bwd ? "backward" : "forward", st, clean ? "no CUDA error" : err);
            /* every pointer the call takes, 2 bytes off; the workspace 16 bytes off as well
             * (16-byte aligned, not 256) */
            for (int j = 0; j < T_N; j++)
                for (size_t off = 2; off <= (j == T_WS ? 16u : 2u); off += 14) {
                    if (!t[j])
                        continue;
                    void *u[T_N];
                    memcpy(u, t, sizeof u);
                    u[j] = (char *)t[j] + off;
                    const char *says = attn_misaligned(u[T_Q], u[T_K], u[T_V], u[T_O], u[T_LSE],
                                                       u[T_DO], u[T_DQ], u[T_DK], u[T_DV],
                                                       u[T_WS], ws);
                    st = call_step(s, p, bwd, u);
                    calls++;
                    cr_expect(st == ATTN_ERR_INVALID, "%s %s with %s %zu bytes off: status %d, "
                              "expected ATTN_ERR_INVALID (%s)", s->name,
                              bwd ? "backward" : "forward", tensor_names[j], off, st,
                              says ? says : "attn_misaligned does not see it either");
                    cr_expect(says && strncmp(says, tensor_names[j], strlen(tensor_names[j])) == 0,
                              "attn_misaligned names %s for %s", says ? says : "nothing",
                              tensor_names[j]);
                    clean = cuda_clean(&err);
                    cr_expect(clean, "%s %s with %s %zu bytes off left a CUDA error: %s", s->name,
                              bwd ? "backward" : "forward", tensor_names[j], off, err);
                }
            for (int j = 0; j < T_N; j++)
                if (t[j])
                    cudaFree(t[j]);
        }
    }
    cr_log_info("%d misaligned calls to %d steps: each ATTN_ERR_INVALID, no CUDA error", calls,
                nsteps);
}

/* ------------------------------------------------------- the top step: repeats, two streams */

/* The highest-numbered loaded step whose forward fits this GPU and takes bf16 at D = 128 with 128
 * queries: the one the README sells as the library. Not named here, so a new top step is tested
 * the day it lands. On Hopper today that is 14_gqa (15 takes decode shapes only), whose forward is
 * steps 12 and 13's with the K/V head indexed per group (g = 1 here). */
static const attn_step *top_forward_step(void)
{
    const int cc = gpu_cc();
    const attn_problem probe = {1, 1, 128, 128, 128, 0, ATTN_BF16, 0.0884f, 1, 0};
    for (int i = nsteps - 1; i >= 0; i--) {
        const attn_step *s = steps[i].info;
        const char *why;
        if (attn_gpu_fits(s, cc, &why) && s->supports(&probe, 0, &why) == ATTN_OK)
            return s;
    }
    cr_assert_fail("no loaded step runs a bf16 D = 128 forward on this GPU (cc %d)", cc);
    return NULL;
}

/* One problem's device buffers: inputs uploaded once, outputs and workspace per run. */
typedef struct {
    attn_problem p;
    size_t nq, nkv, nl, ws_bytes;
    void *q, *k, *v, *o, *lse, *ws;
} dev_problem;

static void dp_init(dev_problem *d, const attn_step *s, const host_inputs *in)
{
    memset(d, 0, sizeof *d);
    d->p = in->p;
    d->nq = in->n_q, d->nkv = in->n_kv, d->nl = in->n_lse;
    d->ws_bytes = s->workspace_bytes(&d->p, 0);
    const size_t e = attn_dtype_bytes(d->p.dtype);
    cr_assert(dev_alloc(&d->q, d->nq * e, "q") && dev_alloc(&d->k, d->nkv * e, "k") &&
              dev_alloc(&d->v, d->nkv * e, "v") && dev_alloc(&d->o, d->nq * e, "o") &&
              dev_alloc(&d->lse, d->nl * 4, "lse"));
    if (d->ws_bytes)
        cr_assert(dev_alloc(&d->ws, d->ws_bytes, "workspace"));
    cr_assert(dev_upload(d->q, in->q, d->nq, d->p.dtype) &&
              dev_upload(d->k, in->k, d->nkv, d->p.dtype) &&
              dev_upload(d->v, in->v, d->nkv, d->p.dtype));
}

/* NaN in the outputs and the workspace, as the checks do before every run. */
static void dp_poison(dev_problem *d, cudaStream_t stream)
{
    const size_t e = attn_dtype_bytes(d->p.dtype);
    cr_assert(cuda_ok(cudaMemsetAsync(d->o, 0xff, d->nq * e, stream), "poison o") &&
              cuda_ok(cudaMemsetAsync(d->lse, 0xff, d->nl * 4, stream), "poison lse") &&
              (!d->ws || cuda_ok(cudaMemsetAsync(d->ws, 0xff, d->ws_bytes, stream), "poison ws")));
}

static attn_status dp_forward(const attn_step *s, dev_problem *d, cudaStream_t stream)
{
    return s->forward(&d->p, d->q, d->k, d->v, d->o, (float *)d->lse, d->ws, stream);
}

static void dp_free(dev_problem *d)
{
    void *b[] = {d->q, d->k, d->v, d->o, d->lse, d->ws};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i])
            cudaFree(b[i]);
    memset(d, 0, sizeof *d);
}

static void describe(char *out, size_t n, const attn_step *s, const dev_problem *d)
{
    char shape[64], ws[32];
    fmt_shape(&d->p, shape, sizeof shape);
    fmt_bytes((double)d->ws_bytes, ws, sizeof ws);
    snprintf(out, n, "%s %s %s %s, workspace %s", s->name, shape, dtype_name(d->p.dtype),
             d->p.causal ? "causal" : "non-causal", d->ws_bytes ? ws : "none");
}

/* Same inputs, same GPU, same step: are O and lse the same bits every run?
 * What the code guarantees (the README's contract states it, with the reasons): every forward is
 * deterministic. Each output element is written by one block, whose sums run in an order fixed
 * by the code, except in step 11's stream-K, where the two pieces of a cut work tile meet in the
 * workspace and whichever ends second merges them: its merge() rounds each product on its own
 * and adds them, which is the same bits whichever piece merges. So the test asserts bitwise
 * identity on every shape, with a workspace or not, and prints what it saw.
 * Stream-K shapes (on an H200's 132 SMs): 1,133,1,3000,128 runs all 133 work tiles by key ranges,
 * 18 of them cut,
 * 3,47,257,4099,128 the last rounds with a ragged Nk, 4,8,4096,4096,128 is the benchmark's. */
Test(gpu, top_forward_step_is_repeatable, .timeout = 600)
{
    need_gpu();
    const attn_step *s = top_forward_step();
    /* the first three stream-K on 114 to 132 SMs (Hopper's), not causal at D = 128 */
    const attn_problem shapes[] = {{1, 133, 1, 3000, 128, 0, ATTN_BF16, 0.0884f, 133, 0},
                                   {3, 47, 257, 4099, 128, 0, ATTN_BF16, 0.0884f, 47, 0},
                                   {4, 8, 4096, 4096, 128, 0, ATTN_BF16, 0.0884f, 8, 0},
                                   {2, 8, 2048, 2048, 128, 1, ATTN_BF16, 0.0884f, 8, 0},
                                   {2, 4, 1000, 1100, 64, 1, ATTN_BF16, 0.125f, 4, 0},
                                   {4, 8, 2048, 2048, 64, 0, ATTN_BF16, 0.125f, 8, 0}};
    enum { RUNS = 8 };
    const uint64_t seed = (uint64_t)time(NULL);
    int asserted = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const char *why = NULL;
        char what[256];
        if (s->supports(&shapes[i], 0, &why) != ATTN_OK) {
            fmt_shape(&shapes[i], what, sizeof what);
            cr_log_info("%s does not take %s: %s", s->name, what, why ? why : "unsupported");
            continue;
        }
        host_inputs in;
        cr_assert(inputs_make_fast(&in, &shapes[i], seed + i), "out of host memory");
        dev_problem d;
        dp_init(&d, s, &in);
        inputs_free(&in);
        describe(what, sizeof what, s, &d);
        const size_t ob = d.nq * attn_dtype_bytes(d.p.dtype), lb = d.nl * 4;
        unsigned char *first = malloc(ob + lb), *now = malloc(ob + lb);
        cr_assert(first && now, "out of host memory");
        int same_runs = 1, o_diff = 0, lse_diff = 0;
        size_t o_worst = 0, lse_worst = 0;
        for (int r = 0; r < RUNS; r++) {
            dp_poison(&d, 0);
            const attn_status st = dp_forward(s, &d, 0);
            const char *err;
            const int clean = cuda_clean(&err);
            cr_assert(st == ATTN_OK && clean, "%s, run %d: status %d, %s", what, r, st,
                      clean ? "no CUDA error" : err);
            unsigned char *out = r ? now : first;
            cr_assert(cuda_ok(cudaMemcpy(out, d.o, ob, cudaMemcpyDeviceToHost), "o") &&
                      cuda_ok(cudaMemcpy(out + ob, d.lse, lb, cudaMemcpyDeviceToHost), "lse"));
            if (r == 0 && i < 3 && d.ws) {
                /* the three stream-K shapes: a step that asked for a workspace must have used
                 * it (zeroed counters, partials), or stream-K went untested while O stayed right */
                uint32_t *w = malloc(d.ws_bytes);
                cr_assert(w && cuda_ok(cudaMemcpy(w, d.ws, d.ws_bytes, cudaMemcpyDeviceToHost), "ws"));
                size_t touched = 0;
                for (size_t x = 0; x < d.ws_bytes / 4; x++)
                    touched += w[x] != 0xffffffffu;
                free(w);
                cr_expect(touched > 0, "%s: the workspace was never written: stream-K did not run",
                          what);
            }
            if (r == 0)
                continue;
            /* count the elements that differ: bf16 (2 bytes) or fp32 O, fp32 lse */
            const size_t oe = attn_dtype_bytes(d.p.dtype);
            size_t no = 0, nl = 0;
            for (size_t x = 0; x < d.nq; x++)
                no += memcmp(first + x * oe, now + x * oe, oe) != 0;
            for (size_t x = 0; x < d.nl; x++)
                nl += memcmp(first + ob + 4 * x, now + ob + 4 * x, 4) != 0;
            same_runs += no == 0 && nl == 0;
            o_diff += no != 0, lse_diff += nl != 0;
            o_worst = no > o_worst ? no : o_worst;
            lse_worst = nl > lse_worst ? nl : lse_worst;
        }
        /* a NaN that repeats is not a result: every element must have been written */
        float *h = malloc(d.nq * sizeof(float));
        cr_assert(h && dev_download(h, d.o, d.nq, d.p.dtype));
        size_t nonfinite = 0, lse_nonfinite = 0;
        for (size_t x = 0; x < d.nq; x++)
            nonfinite += !isfinite(h[x]);
        for (size_t x = 0; x < d.nl; x++) {
            float l;
            memcpy(&l, first + ob + 4 * x, 4);
            lse_nonfinite += !isfinite(l);
        }
        free(h);
        cr_expect(nonfinite == 0 && lse_nonfinite == 0, "%s: %zu elements of O and %zu of lse are "
                  "NaN or Inf", what, nonfinite, lse_nonfinite);
        if (same_runs == RUNS)
            cr_log_info("repeatable: %s: O and lse bitwise identical in %d of %d runs", what,
                        RUNS, RUNS);
        else
            cr_log_warn("NOT repeatable: %s: %d of %d runs differ from the first (O in %d runs, "
                        "at most %zu of %zu elements; lse in %d runs, at most %zu of %zu rows)",
                        what, RUNS - same_runs, RUNS - 1, o_diff, o_worst, d.nq, lse_diff,
                        lse_worst, d.nl);
        asserted++;
        cr_expect(same_runs == RUNS, "%s: %d of %d runs differ from the first (seed %llu)", what,
                  RUNS - same_runs, RUNS - 1, (unsigned long long)(seed + i));
        free(first);
        free(now);
        dp_free(&d);
    }
    cr_log_info("%s: determinism asserted on %d shapes", s->name, asserted);
    cr_expect(asserted == (int)(sizeof shapes / sizeof shapes[0]), "%s took %d of the %zu shapes",
              s->name, asserted, sizeof shapes / sizeof shapes[0]);
}

/* Two different problems of the top step at once, on two non-blocking streams, each with its own
 * buffers and workspace: a step keeps no state between calls (no static workspace, no counters
 * of its own) and a persistent grid does not wait for blocks that another kernel keeps off the
 * SMs. Both results against the fp64 reference (step 00 for the long one). */
Test(gpu, top_step_two_problems_on_two_streams, .timeout = 600)
{
    need_gpu();
    const attn_step *s = top_forward_step();
    check_set_gpu_reference(step("00"));
    /* stream-K with no whole round (18 tiles cut); stream-K over the last rounds, ragged Nk (a
     * long case: step 00 is its reference); causal D = 128 */
    const attn_problem probs[3] = {{1, 133, 1, 3000, 128, 0, ATTN_BF16, 0.0884f, 133, 0},
                                   {3, 47, 257, 4099, 128, 0, ATTN_BF16, 0.0884f, 47, 0},
                                   {2, 4, 700, 900, 128, 1, ATTN_BF16, 0.0884f, 4, 0}};
    const int pairs[2][2] = {{0, 1}, {2, 0}};
    const uint64_t seed = (uint64_t)time(NULL);
    check_case c[3];
    dev_problem d[3];
    char what[3][256];
    for (int i = 0; i < 3; i++) {
        const char *why = NULL;
        cr_assert(s->supports(&probs[i], 0, &why) == ATTN_OK, "%s does not take problem %d: %s",
                  s->name, i, why ? why : "");
        cr_assert(case_prepare(&c[i], &probs[i], INPUT_NORMAL, seed + (uint64_t)i, 0));
        cr_assert(!c[i].skip_why, "%s", c[i].skip_why);
        dp_init(&d[i], s, &c[i].in);
        describe(what[i], sizeof what[i], s, &d[i]);
    }
    cudaStream_t st[2];
    cr_assert(cuda_ok(cudaStreamCreateWithFlags(&st[0], cudaStreamNonBlocking), "stream") &&
              cuda_ok(cudaStreamCreateWithFlags(&st[1], cudaStreamNonBlocking), "stream"));
    for (int r = 0; r < 2; r++) {
        dev_problem *a = &d[pairs[r][0]], *b = &d[pairs[r][1]];
        dp_poison(a, st[0]);
        dp_poison(b, st[1]);
        cr_assert(cuda_ok(cudaDeviceSynchronize(), "poison"));
        /* back to back: the second is queued while the first runs */
        const attn_status sa = dp_forward(s, a, st[0]), sb = dp_forward(s, b, st[1]);
        cr_assert(cuda_ok(cudaStreamSynchronize(st[0]), "stream 0") &&
                  cuda_ok(cudaStreamSynchronize(st[1]), "stream 1") &&
                  cuda_ok(cudaGetLastError(), "after both"));
        cr_assert(sa == ATTN_OK && sb == ATTN_OK, "statuses %d, %d", sa, sb);
        for (int k = 0; k < 2; k++) {
            const int i = pairs[r][k];
            float *o = malloc(d[i].nq * sizeof(float)), *lse = malloc(d[i].nl * sizeof(float));
            cr_assert(o && lse && dev_download(o, d[i].o, d[i].nq, d[i].p.dtype) &&
                      dev_download(lse, d[i].lse, d[i].nl, ATTN_FP32));
            const attn_err eo = attn_compare_blocks(c[i].o, o, (size_t)d[i].p.batch * d[i].p.heads,
                                                    d[i].p.seq_q, d[i].p.head_dim,
                                                    CHECK_BLOCK_ROWS);
            const attn_err el = attn_compare(c[i].lse, lse, d[i].nl);
            const double bo = check_bound(d[i].p.dtype, "O");
            const double bl = check_bound(d[i].p.dtype, "lse");
            cr_expect(attn_err_pass_blocks(&eo, bo, check_block_bound(bo)) && attn_err_pass(&el, bl),
                      "round %d, stream %d: %s (seed %llu): O rel-L2 %.2e (bound %.0e, worst "
                      "block %.2e, worst element %zu: %g for %g), lse %.2e (bound %.0e)", r, k,
                      what[i], (unsigned long long)(seed + (uint64_t)i), eo.rel_l2, bo,
                      eo.block_rel_l2, eo.worst, eo.worst_got, eo.worst_ref, el.rel_l2, bl);
            cr_log_info("round %d, stream %d: %s: O %.2e, lse %.2e against the reference", r, k,
                        what[i], eo.rel_l2, el.rel_l2);
            free(o);
            free(lse);
        }
    }
    cudaStreamDestroy(st[0]);
    cudaStreamDestroy(st[1]);
    for (int i = 0; i < 3; i++) {
        dp_free(&d[i]);
        case_free(&c[i]);
    }
}

/* Step 15 (decode): the same bits on every call, with its splits merged by the combine kernel in
 * a fixed order, and within the bounds of the fp64 reference, on far inputs; on an H200's 132 SMs
 * the shapes cut the keys into 16 splits (16 work tiles of 64 key tiles), 32 (8 work tiles, 16
 * rows each), one (1024 work tiles: O written directly, no workspace), 4 (64 work tiles of 16
 * rows: the bar shape with 4 queries, 2048 keys), 24 (multi-query over 8 heads x 10 queries: 80
 * rows, a full 64-row tile and one of 16; a scale not 1/sqrt(D)) and 261 (one work tile of 2 rows,
 * 3126 key tiles, the last one key; a negative scale). The last of the four runs is on a stream of
 * its own, where the combine's programmatic launch follows the split kernel. */
Test(gpu, step15_decode_is_repeatable_and_right, .timeout = 300)
{
    need_gpu();
    const attn_step *s = step("15");
    if (!s || !attn_gpu_fits(s, gpu_cc(), NULL))
        cr_skip_test("step 15 is not built, or does not fit this GPU");
    const attn_problem shapes[] = {{8, 8, 1, 4096, 128, 0, ATTN_BF16, 0.0884f, 2, 0},
                                   {1, 32, 4, 8192, 64, 0, ATTN_BF16, 0.125f, 8, 0},
                                   {128, 8, 1, 300, 128, 0, ATTN_BF16, 0.0884f, 8, 0},
                                   {8, 32, 4, 2048, 128, 0, ATTN_BF16, 0.0884f, 8, 0},
                                   {1, 8, 10, 3000, 64, 0, ATTN_BF16, 0.3f, 1, 0},
                                   {1, 2, 1, 200001, 128, 0, ATTN_BF16, -0.05f, 1, 0}};
    const uint64_t seed = (uint64_t)time(NULL);
    cudaStream_t other;
    cr_assert(cuda_ok(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "stream"));
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const char *why = NULL;
        cr_assert(s->supports(&shapes[i], 0, &why) == ATTN_OK, "%s", why ? why : "");
        check_case c;
        cr_assert(case_prepare(&c, &shapes[i], INPUT_FAR, seed + i, 0));
        cr_assert(!c.skip_why, "%s", c.skip_why);
        dev_problem d;
        dp_init(&d, s, &c.in);
        char what[256];
        describe(what, sizeof what, s, &d);
        const size_t ob = d.nq * 2, lb = d.nl * 4;
        unsigned char *first = malloc(ob + lb), *now = malloc(ob + lb);
        float *o = malloc(d.nq * sizeof(float)), *lse = malloc(d.nl * sizeof(float));
        cr_assert(first && now && o && lse, "out of host memory");
        for (int r = 0; r < 4; r++) {
            const cudaStream_t stream = r == 3 ? other : 0;
            dp_poison(&d, stream);
            const char *err;
            const attn_status st = dp_forward(s, &d, stream);
            const int clean = cuda_clean(&err);
            cr_assert(st == ATTN_OK && clean, "%s, run %d: status %d, %s", what, r, st,
                      clean ? "no CUDA error" : err);
            unsigned char *out = r ? now : first;
            cr_assert(cuda_ok(cudaMemcpy(out, d.o, ob, cudaMemcpyDeviceToHost), "o") &&
                      cuda_ok(cudaMemcpy(out + ob, d.lse, lb, cudaMemcpyDeviceToHost), "lse"));
            if (r)
                cr_expect(memcmp(first, now, ob + lb) == 0, "%s: run %d differs from the first "
                          "(seed %llu)", what, r, (unsigned long long)(seed + i));
            if (r == 0 && d.ws) {
                /* the splits, counted: each writes (D + 1) floats per row into the poisoned
                 * workspace, packed from its start, and the rest stays NaN; a shape with a
                 * workspace must really split, or the combine never runs */
                const size_t nw = d.ws_bytes / 4, unit = d.nl * (size_t)(d.p.head_dim + 1);
                float *w = malloc(d.ws_bytes);
                cr_assert(w && cuda_ok(cudaMemcpy(w, d.ws, d.ws_bytes, cudaMemcpyDeviceToHost), "ws"));
                size_t written = 0;
                for (size_t x = 0; x < nw; x++)
                    written += !isnan(w[x]);
                free(w);
                cr_expect(written % unit == 0 && written / unit >= 2, "%s: %zu workspace floats "
                          "written, not 2 or more splits of %zu", what, written, unit);
                cr_log_info("%s: %zu splits", what, written / unit);
            }
        }
        cr_assert(dev_download(o, d.o, d.nq, ATTN_BF16) && dev_download(lse, d.lse, d.nl, ATTN_FP32));
        const attn_err eo = attn_compare_blocks(c.o, o, (size_t)d.p.batch * d.p.heads, d.p.seq_q,
                                                d.p.head_dim, CHECK_BLOCK_ROWS);
        const attn_err el = attn_compare(c.lse, lse, d.nl);
        const double bl = check_bound(ATTN_BF16, "lse");
        const double bo = c.o_floor > check_bound(ATTN_BF16, "O") ? c.o_floor
                                                                   : check_bound(ATTN_BF16, "O");
        cr_expect(attn_err_pass_blocks(&eo, bo, check_block_bound(bo)) && attn_err_pass(&el, bl),
                  "%s, far inputs (seed %llu): O rel-L2 %.2e (worst block %.2e), lse %.2e",
                  what, (unsigned long long)(seed + i), eo.rel_l2, eo.block_rel_l2, el.rel_l2);
        cr_log_info("%s: 4 runs bitwise identical (the last on another stream); O %.2e, lse %.2e "
                    "against the fp64 reference", what, eo.rel_l2, el.rel_l2);
        free(first);
        free(now);
        free(o);
        free(lse);
        dp_free(&d);
        case_free(&c);
    }
    cudaStreamDestroy(other);
}

/* Elements of a downloaded tensor that are NaN or Inf (an element the kernel never wrote keeps
 * the poison, 0xff bytes: NaN). */
static size_t count_nonfinite(const unsigned char *x, size_t bytes, attn_dtype t)
{
    size_t n = 0;
    if (t == ATTN_BF16) {
        for (size_t i = 0; i + 1 < bytes; i += 2) {
            uint16_t u;
            memcpy(&u, x + i, 2);
            n += (u & 0x7f80u) == 0x7f80u;
        }
    } else {
        for (size_t i = 0; i + 3 < bytes; i += 4) {
            uint32_t u;
            memcpy(&u, x + i, 4);
            n += (u & 0x7f800000u) == 0x7f800000u;
        }
    }
    return n;
}

/* A deterministic backward (attn_problem.deterministic = 1): every step whose backward takes it
 * must give the very same bits of dQ, dK and dV on every call with the same inputs, on one stream
 * or another. Each step with a backward that fits this GPU is asked; a step that refuses must say
 * why (the CPU tests check that), and the steps that take it (step 00 at least, whose cuBLAS
 * products and own kernels sum in a fixed order; the Hopper backward, step 13 on, must) run three
 * times on one stream and once on a second, outputs and workspace poisoned before each run, and
 * are compared byte for byte; every element must be finite (an unwritten one repeats its NaN
 * poison in every run, the same bits). */
Test(gpu, deterministic_backward_is_repeatable, .timeout = 300)
{
    need_gpu();
    const int cc = gpu_cc();
    /* the fourth: causal D = 128 from Nq = 8192, where steps 13 and 14 take 80-row query tiles
     * (BWD_WIDE_CAUSAL_NQ), ragged in Nq; the last: grouped-query attention (8 query heads on 2
     * K/V heads), for the steps that take it */
    const attn_problem shapes[] = {{2, 3, 300, 257, 64, 1, ATTN_BF16, 0.125f, 3, 1},
                                   {1, 4, 1000, 1000, 128, 0, ATTN_BF16, 0.0884f, 4, 1},
                                   {1, 4, 1000, 777, 128, 1, ATTN_BF16, 0.0884f, 4, 1},
                                   {1, 2, 8200, 8192, 128, 1, ATTN_BF16, 0.0884f, 2, 1},
                                   {2, 8, 300, 257, 64, 1, ATTN_BF16, 0.125f, 2, 1}};
    int took = 0;
    cudaStream_t other;
    cr_assert(cuda_ok(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "stream"));
    for (int i = 0; i < nsteps; i++) {
        const attn_step *s = steps[i].info;
        const char *why;
        if (!s->backward || !attn_gpu_fits(s, cc, &why))
            continue;
        int took_here = 0;
        for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
            const attn_problem *p = &shapes[c];
            if (s->supports(p, 1, &why) != ATTN_OK)
                continue;
            took++, took_here++;
            host_inputs in;
            cr_assert(inputs_make_fast(&in, p, 1234 + c), "out of host memory");
            const size_t e = attn_dtype_bytes(p->dtype), wf = s->workspace_bytes(p, 0),
                         wb = s->workspace_bytes(p, 1), ws_bytes = wf > wb ? wf : wb;
            void *q, *k, *v, *o, *lse, *d_o, *dq, *dk, *dv, *ws = NULL;
            cr_assert(dev_alloc(&q, in.n_q * e, "q") && dev_alloc(&k, in.n_kv * e, "k") &&
                      dev_alloc(&v, in.n_kv * e, "v") && dev_alloc(&o, in.n_q * e, "o") &&
                      dev_alloc(&lse, in.n_lse * 4, "lse") && dev_alloc(&d_o, in.n_q * e, "d_o") &&
                      dev_alloc(&dq, in.n_q * e, "dq") && dev_alloc(&dk, in.n_kv * e, "dk") &&
                      dev_alloc(&dv, in.n_kv * e, "dv") &&
                      (!ws_bytes || dev_alloc(&ws, ws_bytes, "workspace")));
            cr_assert(dev_upload(q, in.q, in.n_q, p->dtype) && dev_upload(k, in.k, in.n_kv, p->dtype) &&
                      dev_upload(v, in.v, in.n_kv, p->dtype) && dev_upload(d_o, in.d_o, in.n_q, p->dtype));
            cr_assert(s->forward(p, q, k, v, o, (float *)lse, ws, 0) == ATTN_OK, "%s forward", s->name);
            const size_t bytes[3] = {in.n_q * e, in.n_kv * e, in.n_kv * e};
            void *out[3] = {dq, dk, dv};
            unsigned char *first[3], *now[3];
            for (int t = 0; t < 3; t++)
                cr_assert((first[t] = malloc(bytes[t])) && (now[t] = malloc(bytes[t])));
            int differ = 0;
            for (int run = 0; run < 4; run++) {
                cudaStream_t st = run == 3 ? other : 0;   /* the last run on the other stream */
                for (int t = 0; t < 3; t++)
                    cr_assert(cuda_ok(cudaMemsetAsync(out[t], 0xff, bytes[t], st), "poison"));
                if (ws_bytes)
                    cr_assert(cuda_ok(cudaMemsetAsync(ws, 0xff, ws_bytes, st), "poison ws"));
                cr_assert(s->backward(p, q, k, v, o, (const float *)lse, d_o, dq, dk, dv, ws, st) ==
                              ATTN_OK, "%s backward", s->name);
                cr_assert(cuda_ok(cudaStreamSynchronize(st), "sync"));
                for (int t = 0; t < 3; t++) {
                    cr_assert(cuda_ok(cudaMemcpy(run ? now[t] : first[t], out[t], bytes[t],
                                                 cudaMemcpyDeviceToHost), "download"));
                    if (run && memcmp(now[t], first[t], bytes[t]) != 0)
                        differ |= 1 << t;
                }
            }
            char shape[64];
            fmt_shape(p, shape, sizeof shape);
            cr_expect(!differ, "%s, deterministic backward, %s: %s%s%s differ between runs", s->name,
                      shape, differ & 1 ? "dQ " : "", differ & 2 ? "dK " : "", differ & 4 ? "dV" : "");
            size_t nonfinite = 0;
            for (int t = 0; t < 3; t++)
                nonfinite += count_nonfinite(first[t], bytes[t], p->dtype);
            cr_expect(nonfinite == 0, "%s, deterministic backward, %s: %zu elements of dQ, dK, dV "
                      "NaN or Inf (unwritten, or wrong)", s->name, shape, nonfinite);
            cr_log_info("%s deterministic backward %s: dQ, dK, dV the same bits over 4 runs, 2 streams%s",
                        s->name, shape, differ ? ": NO" : "");
            for (int t = 0; t < 3; t++)
                free(first[t]), free(now[t]);
            void *b[] = {q, k, v, o, lse, d_o, dq, dk, dv, ws};
            for (size_t x = 0; x < sizeof b / sizeof b[0]; x++)
                if (b[x])
                    cudaFree(b[x]);
            inputs_free(&in);
        }
        cr_expect(atoi(s->name) < 13 || took_here > 0, "%s took none of the deterministic "
                  "backward problems (the Hopper backward, step 13 on, must)", s->name);
    }
    cudaStreamDestroy(other);
    cr_expect(took > 0, "no step took a deterministic backward on this GPU (step 00 should)");
}

/* Each problem's backward (causal, or deterministic) against the reference (step 00 in fp32: long
 * cases), outputs poisoned first. */
static void causal_backwards(const attn_step *s, const attn_problem *probs, size_t n)
{
    const char *why = NULL;
    if (!attn_gpu_fits(s, gpu_cc(), &why))
        cr_skip_test("%s does not run on this GPU: %s", s->name, why ? why : "");
    check_set_gpu_reference(step("00"));
    const uint64_t seed = (uint64_t)time(NULL);
    for (size_t i = 0; i < n; i++) {
        char what[64];
        fmt_shape(&probs[i], what, sizeof what);
        check_case c;
        check_result r;
        cr_assert(case_prepare(&c, &probs[i], INPUT_NORMAL, seed + i, 1), "%s: out of memory", what);
        cr_assert(!c.skip_why, "%s: %s", what, c.skip_why);
        cr_assert(case_run(&c, s, 1, 0, &r), "%s: the harness failed", what);
        if (r.v != V_PASS)
            check_print_failure(stderr, &c, &r, s->name, 1);
        const char *kind = probs[i].causal ? (probs[i].deterministic ? "causal deterministic"
                                                                      : "causal")
                                           : (probs[i].deterministic ? "deterministic" : "");
        cr_expect(r.v == V_PASS, "%s backward, %s %s (seed %llu): %s%s%s", s->name, kind, what,
                  (unsigned long long)(seed + i), verdict_name(r.v), r.why ? ": " : "",
                  r.why ? r.why : "");
        cr_log_info("%s backward, %s %s: dQ %.2e, dK %.2e, dV %.2e against the reference",
                    s->name, kind, what, r.t[0].err.rel_l2, r.t[1].err.rel_l2, r.t[2].err.rel_l2);
        case_free(&c);
    }
}

/* Step 13's backward launches causal blocks in sections of heads (bwd_heads_per_section): the
 * grid's shapes have a few heads and make one section, in which the order is the plain one (key
 * tile 0 of every head first). These make, on 132 SMs (H100, H200), two sections of 16 and 14
 * heads, ten of 2 (80-row tiles) and ten of 4, and other numbers on other GPUs, with ragged Nq
 * and Nk: every gradient against the reference (step 00 in fp32: long cases), outputs poisoned
 * first. */
Test(gpu, step13_causal_sections_of_heads, .timeout = 300)
{
    need_gpu();
    const attn_problem probs[] = {{1, 30, 4000, 3900, 64, 1, ATTN_BF16, 0.125f, 30, 0},
                                  {1, 20, 8200, 8100, 128, 1, ATTN_BF16, 0.0884f, 20, 0},
                                  {1, 40, 4000, 4100, 64, 1, ATTN_BF16, 0.125f, 40, 0}};
    causal_backwards(step("13"), probs, sizeof probs / sizeof probs[0]);
}

/* The deterministic backward's values (its repeat test checks bits): not causal, shapes whose key
 * tiles walk in several shifted groups (16 key tiles over 3 query tiles of 80 rows at D = 128:
 * groups of 3, six of them; over 5 of 64 rows at D = 64: four), causal at D = 128, and for step
 * 14 grouped-query problems (4 and 8 query heads a K/V head), which no other test runs
 * deterministic; every gradient against the fp64 reference, outputs poisoned first. */
Test(gpu, deterministic_backward_is_right, .timeout = 300)
{
    need_gpu();
    const attn_problem mha[] = {{1, 2, 200, 2000, 128, 0, ATTN_BF16, 0.0884f, 2, 1},
                                {1, 2, 300, 2000, 64, 0, ATTN_BF16, 0.125f, 2, 1},
                                {1, 2, 700, 1500, 128, 1, ATTN_BF16, 0.0884f, 2, 1}};
    const attn_problem gqa[] = {{1, 8, 200, 2000, 128, 0, ATTN_BF16, 0.0884f, 2, 1},
                                {1, 8, 300, 1000, 64, 0, ATTN_BF16, 0.125f, 1, 1}};
    causal_backwards(step("13"), mha, sizeof mha / sizeof mha[0]);
    causal_backwards(step("14"), mha, sizeof mha / sizeof mha[0]);
    causal_backwards(step("14"), gqa, sizeof gqa / sizeof gqa[0]);
}

/* Step 14's sections count K/V heads, each block walking its group of query heads: the same
 * numbers of blocks as step 13's test above, now with groups of 2, 2 and 4 query heads. */
Test(gpu, step14_grouped_causal_sections_of_heads, .timeout = 300)
{
    need_gpu();
    const attn_problem probs[] = {{1, 60, 4000, 3900, 64, 1, ATTN_BF16, 0.125f, 30, 0},
                                  {1, 40, 8200, 8100, 128, 1, ATTN_BF16, 0.0884f, 20, 0},
                                  {1, 160, 4000, 4100, 64, 1, ATTN_BF16, 0.125f, 40, 0}};
    causal_backwards(step("14"), probs, sizeof probs / sizeof probs[0]);
}

/* ------------------------------------------------------------------------- the skips */

/* Criterion's synthesis counts no skipped test ("Tested: 0 | Passing: 0" on a machine without a
 * GPU), so the run ends with how many skipped, and why: one line per distinct reason. */
ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    if (!stats->tests_skipped)
        return;
    const char *why[16];
    int count[16], n = 0, other = 0;
    for (struct criterion_suite_stats *ss = stats->suites; ss; ss = ss->next)
        for (struct criterion_test_stats *ts = ss->tests; ts; ts = ts->next) {
            if (ts->test_status != CR_STATUS_SKIPPED)
                continue;
            const char *m = ts->message && *ts->message
                                ? ts->message
                                : "no reason given (left out by --filter, or disabled)";
            int k = 0;
            while (k < n && strcmp(why[k], m) != 0)
                k++;
            if (k == n && n == 16) {
                other++;
                continue;
            }
            if (k == n)
                why[n] = m, count[n++] = 0;
            count[k]++;
        }
    static const char prefix[] = "GPU test skipped: ";   /* need_gpu's, said once here */
    if (n == 1 && !other) {
        const char *m = strncmp(why[0], prefix, sizeof prefix - 1) ? why[0]
                                                                   : why[0] + sizeof prefix - 1;
        fprintf(stderr, "[SKIP] %zu of %zu GPU tests skipped: %s\n", stats->tests_skipped,
                stats->nb_tests, m);
        return;
    }
    fprintf(stderr, "[SKIP] %zu of %zu GPU tests skipped, for these reasons:\n",
            stats->tests_skipped, stats->nb_tests);
    for (int k = 0; k < n; k++)
        fprintf(stderr, "[SKIP]   %d: %s\n", count[k], why[k]);
    if (other)
        fprintf(stderr, "[SKIP]   %d more, for other reasons\n", other);
}
