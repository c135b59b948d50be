/* GPU tests: every step found, on the whole grid, against the fp64 reference; plus the cases
 * that say something on their own (step 01's bug, the worked example, bad input). Without a
 * GPU each test skips with a message naming why. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

static const attn_step *step(const char *spec)
{
    const attn_step *s = steps_find(steps, nsteps, spec);
    if (!s)
        cr_skip_test("step %s is not built", spec);
    return s;
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
        attn_problem ragged = {2, 1, 100, 100, 64, 0, t ? ATTN_BF16 : ATTN_FP32, 0.125f};
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
    attn_problem p = {1, 1, 1, 3, 1, 0, ATTN_FP32, 1.f};
    const float q = 1.f, k[3] = {1.f, 2.f, 3.f}, v[3] = {10.f, 20.f, 30.f};
    void *dq, *dk, *dv, *dout, *dlse;
    cr_assert(dev_alloc(&dq, 4, "q") && dev_alloc(&dk, 12, "k") && dev_alloc(&dv, 12, "v") &&
              dev_alloc(&dout, 4, "o") && dev_alloc(&dlse, 4, "lse"));
    cr_assert(dev_upload(dq, &q, 1, ATTN_FP32) && dev_upload(dk, k, 3, ATTN_FP32) &&
              dev_upload(dv, v, 3, ATTN_FP32));
    const double num = 10 * exp(-2.0) + 20 * exp(-1.0) + 30, den = exp(-2.0) + exp(-1.0) + 1;
    const struct { const char *step; double want; } cases[] = {
        {"00", num / den}, {"02", num / den}, {"01", num / (den + 13 * exp(-3.0))}};
    for (int i = 0; i < 3; i++) {
        const attn_step *s = steps_find(steps, nsteps, cases[i].step);
        if (!s)
            continue;
        void *ws = NULL;
        cr_assert(dev_alloc(&ws, s->workspace_bytes(&p, 0), "workspace"));
        cr_assert(dev_poison(dout, 4) && dev_poison(dlse, 4));
        cr_assert_eq(s->forward(&p, dq, dk, dv, dout, dlse, ws, 0), ATTN_OK);
        float o;
        cr_assert(dev_download(&o, dout, 1, ATTN_FP32));
        cr_expect(fabs(o - cases[i].want) < 1e-4, "%s: output %.6f, expected %.6f", s->name, o,
                  cases[i].want);
        cudaFree(ws);
    }
    cr_expect(fabs(num / den - 25.752) < 5e-4 && fabs(num / (den + 13 * exp(-3.0)) - 18.00) < 5e-3);
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
