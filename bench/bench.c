/* bench.c: `attn bench --sweep NAME`: every selected step on every shape of the sweep, one CSV row
 * per measurement (bench/measure.c says how each is measured). The sweeps are defined once, in
 * bench/sweeps.txt, which bench/peer_sdpa.py reads too.
 *
 * CSV columns: gpu,step,pass,dtype,batch,heads,seq_q,seq_k,head_dim,causal,ms_median,ms_min,
 * ms_max,tflops,workspace_bytes,status (status: bench/measure.h), then the check of the row:
 * check (what it was against), check_tensor (the output closest to its bounds), rel_l2 (its
 * whole-tensor error) and block_rel_l2 (its worst block's). Step 00 on the same inputs is the
 * reference wherever it fits: the others must stay within twice the bounds of it, whole tensor
 * and every block. Where it does not fit (N = 32768), a sample of rows is checked against the
 * fp64 CPU reference (bench/measure.h: row_sample), made once per shape for the forward.
 * Last, heads_kv (H_kv: the K/V heads, H where the sweep's shape has five fields) and gbps: the
 * bytes of K and V (2 * B * H_kv * Nk * D * 2 in bf16) over the median time, in GB/s, what a
 * decode step is measured by (the decode sweep). Readers find columns by name, so CSVs written
 * before these two were added still read.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include "measure.h"
#include "sweeps.h"

const char bench_usage[] =
    "usage: attn bench --sweep NAME [--steps S,S,...] [--out FILE.csv] [--quick] [--reps N]\n"
    "  --sweep NAME     a sweep of bench/sweeps.txt: standard (bf16, B=4, H=8, D 64 and 128,\n"
    "                   N 512..16384 causal and not, N=32768 non-causal; forward and backward)\n"
    "                   or single_head (fp32, the single-head shapes of the Triton tutorial\n"
    "                   kernel, forward) or decode (bf16, one to four queries against K/V\n"
    "                   caches of 1k-128k keys, grouped heads; forward; read in GB/s) or\n"
    "                   bars (bf16, the eight bar shapes: B=4, H=8, N 4096 and 16384, D 64\n"
    "                   and 128, causal and not; forward and backward)\n"
    "  --steps S,S,...  only these steps (default: every step)\n"
    "  --out FILE.csv   write the CSV there (default: stdout); progress goes to stderr\n"
    "  --quick          only the lines of the sweep marked quick\n"
    "  --reps N         timed runs per measurement (default: about 200 ms worth, 3 to 30)\n"
    "  Each shape's dtype is the sweep's (no --dtype): a step that does not support it, or the\n"
    "  shape, gets a row with status unsupported (the fp32 rows stop at step 02).\n"
    "  The sweeps file is $ATTN_SWEEPS_FILE if set.\n";

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

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"sweep", required_argument, NULL, 's'}, {"steps", required_argument, NULL, 'S'},
        {"out", required_argument, NULL, 'o'},   {"quick", no_argument, NULL, 'q'},
        {"reps", required_argument, NULL, 'r'},  {"help", no_argument, NULL, 'h'},
        {"dtype", required_argument, NULL, 't'}, {NULL, 0, NULL, 0}};
    const char *sweep = NULL, *out_path = NULL, *steps_arg = NULL;
    int quick = 0, reps = 0, c;
    long n;
    while ((c = cli_getopt(argc, argv, "h", opts, "bench")) != -1) {
        switch (c) {
        case 's':
            if (sweep)
                return cli_fail("bench", "--sweep is given twice (one sweep per run)");
            sweep = optarg;
            break;
        case 'S':
            if (steps_arg)
                return cli_fail("bench", "--steps is given twice (one list: --steps S,S,...)");
            steps_arg = optarg;
            break;
        case 'o':
            out_path = optarg;
            break;
        case 'q':
            quick = 1;
            break;
        case 'r':
            if (!parse_long(optarg, 1, 100000, &n))
                return cli_fail("bench", "--reps takes a whole number from 1 to 100000, not '%s'", optarg);
            reps = (int)n;
            break;
        case 't':
            return cli_fail("bench", "--dtype is attn run's: each shape of a sweep carries its own "
                                     "dtype (standard: bf16, single_head: fp32; bench/sweeps.txt)");
        case 'h':
            fputs(bench_usage, stdout);
            return 0;
        default:
            return 2;
        }
    }
    if (optind < argc)
        return cli_fail("bench", "unexpected argument '%s'", argv[optind]);
    if (!sweep)
        return cli_fail("bench", "--sweep is required (attn bench --help)");

    char path[4096], err[4400];
    static sweep_config cfg[MAX_SWEEP_CONFIGS];
    sweeps_path(path, sizeof path);
    const int ncfg = sweeps_read(path, sweep, quick, cfg, MAX_SWEEP_CONFIGS, err, sizeof err);
    if (ncfg < 0)
        return cli_fail("bench", "%s", err);

    loaded_step steps[MAX_STEPS];
    const int nsteps = steps_load(steps, MAX_STEPS, err, sizeof err);
    if (nsteps < 0)
        return cli_fail("bench", "%s", err);
    steps_report_load_errors(stderr, "attn bench");
    const attn_step *sel[MAX_STEPS];
    int nsel = 0;
    if (steps_arg && !parse_step_list(steps_arg, steps, nsteps, sel, MAX_STEPS, &nsel, err, sizeof err))
        return cli_fail("bench", "--steps: %s", err);
    if (!steps_arg)
        for (int i = 0; i < nsteps; i++)
            sel[nsel++] = steps[i].info;

    char why[256];
    if (!gpu_available(why, sizeof why))
        return cli_fail("bench", "%s", why);
    FILE *out = stdout;
    if (out_path && !(out = fopen(out_path, "w")))
        return cli_fail("bench", "cannot write %s", out_path);
    gpu_info g;
    gpu_timer timer;
    if (!gpu_setup(&g, &timer)) {
        if (out != stdout)
            fclose(out);
        return 2;
    }
    const int cc = g.cc_major * 10 + g.cc_minor;
    fprintf(out, "gpu,step,pass,dtype,batch,heads,seq_q,seq_k,head_dim,causal,ms_median,ms_min,"
                 "ms_max,tflops,workspace_bytes,status,check,check_tensor,rel_l2,block_rel_l2,"
                 "heads_kv,gbps\n");
    const attn_step *s00 = steps_find(steps, nsteps, "0");

    /* Progress: work is counted in FLOPs, so the estimate of what remains weighs big shapes. */
    double total_work = 0, done_work = 0;
    for (int i = 0; i < ncfg; i++)
        total_work += nsel * attn_flops(&cfg[i].p, cfg[i].backward);
    const double t0 = now_s();
    int rows = 0, bad_rows = 0, fatal = 0;
    for (int i = 0; i < ncfg && !fatal; i++) {
        const attn_problem *p = &cfg[i].p;
        const int bwd = cfg[i].backward;
        int any = 0;   /* a backward shape with only forward-only steps selected: no rows */
        for (int s = 0; s < nsel; s++)
            any |= !bwd || sel[s]->backward != NULL;
        if (!any)
            continue;
        host_inputs in;
        if (!inputs_make_fast(&in, p, 0x5eed0000ull + (uint64_t)i)) {
            fatal = 1;
            break;
        }
        /* Step 00 on the same inputs is the spot-check reference wherever it fits; else a sample
         * of rows against the fp64 CPU reference, made here once for every step of the shape. */
        outputs ref = {0};
        row_sample sample = {0};
        char dummy[320];
        if (s00 && attn_gpu_fits(s00, cc, NULL) && measure_fits(s00, p, bwd, dummy, sizeof dummy)) {
            measurement m0;
            measure(s00, &in, bwd, cc, NULL, 1, &timer, &ref, &m0);
            if (m0.status != M_OK)
                outputs_free(&ref);
        }
        if (!ref.count) {
            if (!sample_make(&sample, &in, bwd, 0x5a3b1e00ull + (uint64_t)i)) {
                inputs_free(&in);
                fprintf(stderr, "attn bench: out of host memory for the sampled reference\n");
                fatal = 1;
                break;
            }
            if (!bwd)
                fprintf(stderr, "[%3d/%3d] reference: %d sampled query rows per head, fp64 CPU, "
                        "%.1f s\n", i + 1, ncfg, sample.nq, sample.seconds);
        }
        const reference against = {ref.count ? &ref : NULL, ref.count ? NULL : &sample};
        for (int s = 0; s < nsel && !fatal; s++) {
            measurement m;
            measure(sel[s], &in, bwd, cc, &against, reps, &timer, NULL, &m);
            fprintf(out, "%s,%s,%s,%s,%d,%d,%d,%d,%d,%d,", g.name, sel[s]->name, bwd ? "bwd" : "fwd",
                    dtype_name(p->dtype), p->batch, p->heads, p->seq_q, p->seq_k, p->head_dim,
                    p->causal);
            if (m.t.reps)
                fprintf(out, "%.4f,%.4f,%.4f,%.2f,", m.t.median_ms, m.t.min_ms, m.t.max_ms, m.tflops);
            else
                fprintf(out, ",,,,");
            fprintf(out, "%zu,%s,%s,", m.ws_bytes, m_status_name[m.status], m.against);
            if (isnan(m.diff.err))
                fprintf(out, ",,,");
            else
                fprintf(out, "%s,%.3e,%.3e,", m.diff.tensor, m.diff.err, m.diff.block_err);
            fprintf(out, "%d,", attn_heads_kv(p));
            if (m.t.reps)
                fprintf(out, "%.1f\n", attn_kv_bytes(p) / (m.t.median_ms * 1e-3) / 1e9);
            else
                fprintf(out, "\n");
            fflush(out);
            rows++;
            done_work += attn_flops(p, bwd);
            const double el = now_s() - t0;
            char e1[32], e2[32];
            fmt_duration(el, e1, sizeof e1);
            fmt_duration(done_work > 0 ? el * (total_work - done_work) / done_work : 0, e2, sizeof e2);
            char shape[64];
            fmt_shape(p, shape, sizeof shape);
            fprintf(stderr, "[%3d/%3d] %-24s %s %s %-20s %s: ", i + 1, ncfg, sel[s]->name,
                    bwd ? "bwd" : "fwd", dtype_name(p->dtype), shape,
                    p->causal ? "causal    " : "non-causal");
            if (m.status == M_SKIP)
                fprintf(stderr, "SKIP (%s)", m.why);
            else if (m.t.reps)
                fprintf(stderr, "%9.3f ms %8.2f TFLOP/s %7.0f GB/s%s%s%s%s", m.t.median_ms, m.tflops,
                        attn_kv_bytes(p) / (m.t.median_ms * 1e-3) / 1e9,
                        m.status == M_OK ? "" : "  ", m.status == M_OK ? "" : m_status_name[m.status],
                        m.status == M_OK ? "" : ": ", m.status == M_OK ? "" : m.why);
            else
                fprintf(stderr, "%s (%s)", m_status_name[m.status], m.why);
            fprintf(stderr, "  [elapsed %s, ~%s left]\n", e1, e2);
            if (m.status == M_WRONG || m.status == M_CHANGED || m.status == M_ERROR)
                bad_rows++;
            if (m.status == M_ERROR && cudaGetLastError() != cudaSuccess) {
                fprintf(stderr, "attn bench: the CUDA context is broken; stopping\n");
                fatal = 1;
            }
        }
        outputs_free(&ref);
        sample_free(&sample);
        inputs_free(&in);
    }
    if (out != stdout)
        fclose(out);
    gpu_teardown(&timer);
    fprintf(stderr, "attn bench: %d rows%s%s in %.0f s; %d wrong, changed or failed\n", rows,
            out_path ? " to " : "", out_path ? out_path : "", now_s() - t0, bad_rows);
    return fatal ? 2 : bad_rows ? 1 : 0;
}
