/* attn: the front door. list, check, run, bench, info; `attn --help` and `attn CMD --help`.
 *
 * Layers, each using only those below it:
 *   cli/attn.c      this file: the commands list, check, run, info
 *   bench/          the timed measurement (measure.c), the sweeps file (sweeps.c), attn bench
 *   common/         the harness: contract, reference, checks (check.c), GPU, steps, parsing
 * Every command parses its options with getopt_long (cli_getopt) and reports bad input as one
 * line, "attn CMD: what is wrong", with exit status 2.
 */
#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include "harness.h"
#include "measure.h"

static const char list_usage[] =
    "usage: attn list\n"
    "  every step: the dtypes and head dims its supports() function accepts (D probed from 1 to 1024),\n"
    "  forward or forward and backward, the GPUs it runs on, and the idea it adds; a line 'GQA:'\n"
    "  under the steps that take grouped-query attention (H_kv < H, --shape's sixth field)\n";
static const char check_usage[] =
    "usage: attn check [--step S]... [--steps S,S,...] [--inputs M] [--decode] [--forward]\n"
    "                  [--csv FILE] [--seed N]\n"
    "  every step (or those named) on the shape grid against the fp64 reference: fp32 and bf16,\n"
    "  causal and not, normal/large/late/far inputs, forward and backward; one line per case\n"
    "  (PASS, FAIL, XFAIL, XPASS or SKIP) and a summary\n"
    "  --step S         only this step (repeatable)\n"
    "  --steps S,S,...  only these steps\n"
    "  --inputs M       only these inputs: normal, large, late or far (default: all four)\n"
    "  --decode         only the grid's cases of at most 16 queries (step 15's decode shapes\n"
    "                   and the older few-query ones), their seeds as in the whole grid\n"
    "  --forward        forward passes only (no backward runs, no backward references)\n"
    "  --csv FILE       also one CSV row per output tensor\n"
    "  --seed N         seed of the random inputs (default: the time; failures print theirs)\n";
static const char run_usage[] =
    "usage: attn run --step S --shape B,H,Nq,Nk,D[,H_kv] [options]\n"
    "  one checked run (as attn check does it) and one timed measurement\n"
    "  --step S                   the step (2, 02 or 02_ragged_mask)\n"
    "  --shape B,H,Nq,Nk,D        batch, heads, query and key lengths, head dim (each 1..2^31-1)\n"
    "        [,H_kv]              and the K/V heads of grouped-query attention (dividing H;\n"
    "                             default H)\n"
    "  --dtype fp32|bf16          (any case) default: bf16 if the step supports bf16 for this\n"
    "                             problem, else fp32\n"
    "  --causal                   query i sees keys j <= i\n"
    "  --backward                 time the backward (dQ, dK, dV) instead of the forward\n"
    "  --deterministic            ask for a backward with bitwise-repeatable outputs (a step\n"
    "                             whose backward is not refuses it and says why)\n"
    "  --inputs normal|large|late|far  the inputs of the checked run (default normal); far:\n"
    "                             each row's scores all far below or far above zero\n"
    "  --seed N                   seed of the random inputs (default: the time)\n"
    "  --reps N                   timed runs (default: about 200 ms worth, 3 to 30)\n";
static const char info_usage[] = "usage: attn info\n  the GPU as key=value lines\n";

static const char usage[] =
    "usage: attn <command> [options]; attn <command> --help shows one command's options\n"
    "\n"
    "  list     the steps: what each supports and the idea it adds\n"
    "  check    every step on the shape grid against the fp64 reference\n"
    "  run      one step on one shape: a checked run, then a timed measurement\n"
    "  bench    a sweep of bench/sweeps.txt (standard, single_head, decode), one CSV row per measurement\n"
    "  info     the GPU as key=value lines\n"
    "\n"
    "S is a step number (2, 02) or name (02_ragged_mask). Exit status: 0 ok, 1 a check failed,\n"
    "2 bad input or no usable GPU.\n";

/* Options of a command that takes none but --help. */
static int no_options(int argc, char **argv, const char *cmd, const char *help)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = cli_getopt(argc, argv, "h", opts, cmd)) != -1) {
        if (c != 'h')
            return 2;
        fputs(help, stdout);
        return 0;
    }
    if (optind < argc)
        return cli_fail(cmd, "unexpected argument '%s'", argv[optind]);
    return -1;
}

static int load(const char *cmd, loaded_step *steps)
{
    char err[512];
    const int n = steps_load(steps, MAX_STEPS, err, sizeof err);
    if (n < 0)
        return cli_fail(cmd, "%s", err), -1;
    /* a step that does not load is named with the loader's message; the others go on */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "attn %s", cmd);
    steps_report_load_errors(stderr, prefix);
    return n;
}

/* ------------------------------------------------------------------------------- list */

/* What a step supports, found by asking supports() (pure host code, no GPU needed):
 * set[t][D] for dtype t and D in 1..1024, at 64 queries, or at one query for a decode step,
 * which takes only a few (step 15). */
#define MAX_D 1024
static int supports_at(const attn_step *s, int backward, int heads, int hkv, int d, int t)
{
    for (int nq = 64; nq >= 1; nq -= 63) {
        attn_problem p = {1, heads, nq, 64, d, 0, (attn_dtype)t, (float)(1.0 / sqrt((double)d)), hkv, 0};
        const char *why;
        if (s->supports(&p, backward, &why) == ATTN_OK)
            return 1;
    }
    return 0;
}

static void probe(const attn_step *s, int backward, unsigned char set[2][MAX_D + 1])
{
    memset(set, 0, 2 * (MAX_D + 1));
    for (int t = 0; t < 2; t++)
        for (int d = 1; d <= MAX_D; d++)
            set[t][d] = (!backward || s->backward) && supports_at(s, backward, 1, 1, d, t);
}

/* Whether s takes grouped-query attention where it takes multi-head attention (probed as set
 * says, at 1,4,64,64,D (or one query) with H_kv = 2): 0 no, 1 forward only, 2 forward and
 * backward. */
static int probe_gqa(const attn_step *s, unsigned char fwd[2][MAX_D + 1],
                     unsigned char bwd[2][MAX_D + 1])
{
    int f = 0, b = 0;
    for (int t = 0; t < 2; t++)
        for (int d = 1; d <= MAX_D; d++) {
            f |= fwd[t][d] && supports_at(s, 0, 4, 2, d, t);
            b |= bwd[t][d] && supports_at(s, 1, 4, 2, d, t);
        }
    return f ? 1 + b : 0;
}

/* The most queries a forward takes, at the first dtype and head dim it takes, when that is below
 * 1024 (a decode step: few queries against a long K/V cache); else 0. */
static int probe_nq_max(const attn_step *s, unsigned char fwd[2][MAX_D + 1])
{
    for (int t = 0; t < 2; t++)
        for (int d = 1; d <= MAX_D; d++) {
            if (!fwd[t][d])
                continue;
            int nq = 0;
            for (int n = 1; n <= 1024; n++) {
                attn_problem p = {1, 1, n, 64, d, 0, (attn_dtype)t, (float)(1.0 / sqrt((double)d)), 1, 0};
                const char *why;
                if (s->supports(&p, 0, &why) != ATTN_OK)
                    break;
                nq = n;
            }
            return nq < 1024 ? nq : 0;
        }
    return 0;
}

static int set_empty(const unsigned char *set)
{
    for (int d = 1; d <= MAX_D; d++)
        if (set[d])
            return 0;
    return 1;
}

/* Whether step s takes dtype t for some head dim (the probe above, at 1,1,64,64). */
static int takes_dtype(const attn_step *s, attn_dtype t, int backward)
{
    unsigned char set[2][MAX_D + 1];
    probe(s, backward, set);
    return !set_empty(set[t]);
}

/* attn run without --dtype: bf16 if the step supports it for p, else fp32 if it supports that;
 * if neither, bf16 when the step takes bf16 at all (so the refusal names what else is wrong). */
static attn_dtype default_dtype(const attn_step *s, const attn_problem *p, int backward)
{
    static const attn_dtype order[2] = {ATTN_BF16, ATTN_FP32};
    for (int i = 0; i < 2; i++) {
        attn_problem q = *p;
        const char *why;
        q.dtype = order[i];
        if (s->supports(&q, backward, &why) == ATTN_OK)
            return order[i];
    }
    return takes_dtype(s, ATTN_FP32, backward) && !takes_dtype(s, ATTN_BF16, backward) ? ATTN_FP32
                                                                                       : ATTN_BF16;
}

/* What else is wrong with p besides its dtype, when s takes no p->dtype at all: the reason s
 * gives for p in a dtype it does take, if it refuses that too (NULL when the dtype is all). A
 * step's supports() may test the dtype first; the user should hear about D=96 before fp32. */
static const char *other_reason(const attn_step *s, const attn_problem *p, int backward)
{
    if (takes_dtype(s, p->dtype, backward))
        return NULL;
    for (int t = 0; t < 2; t++) {
        attn_problem q = *p;
        const char *why = NULL;
        q.dtype = (attn_dtype)t;
        if (q.dtype == p->dtype || !takes_dtype(s, q.dtype, backward))
            continue;
        if (s->supports(&q, backward, &why) != ATTN_OK)
            return why ? why : "no reason given";
        return NULL;   /* in that dtype p is fine: the dtype is all that is wrong */
    }
    return NULL;
}

/* "1-128" when the dtypes share their head dims, else "fp32 1-128, bf16 64,128". */
static void fmt_dims(unsigned char set[2][MAX_D + 1], char *out, size_t n)
{
    char a[256], b[256];
    fmt_int_set(set[0], MAX_D, a, sizeof a);
    fmt_int_set(set[1], MAX_D, b, sizeof b);
    if (set_empty(set[0]) || set_empty(set[1]) || memcmp(set[0], set[1], MAX_D + 1) == 0)
        snprintf(out, n, "%s", set_empty(set[0]) ? b : a);
    else
        snprintf(out, n, "fp32 %s, bf16 %s", a, b);
}

/* "any", "sm_90a", "sm_80+", "sm_80-sm_89", "up to sm_89". A step that runs on exactly one compute
 * capability is built for its architecture-specific target (sm_90a: wgmma, TMA, setmaxnreg), which
 * runs there and nowhere else, so the listing names that target. */
static void fmt_gpu(const attn_step *s, char *out, size_t n)
{
    if (!s->cc_min && !s->cc_max)
        snprintf(out, n, "any");
    else if (s->cc_min == s->cc_max)
        snprintf(out, n, "sm_%da", s->cc_min);
    else if (!s->cc_max)
        snprintf(out, n, "sm_%d+", s->cc_min);
    else if (!s->cc_min)
        snprintf(out, n, "up to sm_%d", s->cc_max);
    else
        snprintf(out, n, "sm_%d-sm_%d", s->cc_min, s->cc_max);
}

static int cmd_list(int argc, char **argv)
{
    int rc = no_options(argc, argv, "list", list_usage);
    if (rc >= 0)
        return rc;
    loaded_step steps[MAX_STEPS];
    const int n = load("list", steps);
    if (n < 0)
        return 2;
    /* Which GPU is here, if any: only to say which steps it cannot run. */
    char why[256];
    int cc = 0;
    gpu_info g;
    if (gpu_available(why, sizeof why) && gpu_query(&g))
        cc = g.cc_major * 10 + g.cc_minor;
    printf("%-24s %-10s %-12s %-8s %-6s %s\n", "step", "dtypes", "head dims", "passes", "GPU",
           "the idea it adds");
    for (int i = 0; i < n; i++) {
        const attn_step *s = steps[i].info;
        unsigned char fwd[2][MAX_D + 1], bwd[2][MAX_D + 1];
        probe(s, 0, fwd);
        probe(s, 1, bwd);
        char dt[16] = "", dims[600], passes[700], gpu[32];
        for (int t = 0; t < 2; t++)
            if (!set_empty(fwd[t]))
                snprintf(dt + strlen(dt), sizeof dt - strlen(dt), "%s%s", *dt ? " " : "",
                         dtype_name((attn_dtype)t));
        fmt_dims(fwd, dims, sizeof dims);
        if (set_empty(bwd[0]) && set_empty(bwd[1]))
            snprintf(passes, sizeof passes, "fwd");
        else if (memcmp(fwd, bwd, sizeof fwd) == 0)
            snprintf(passes, sizeof passes, "fwd+bwd");
        else {
            char b[600];
            fmt_dims(bwd, b, sizeof b);
            snprintf(passes, sizeof passes, "fwd+bwd (bwd: %s)", b);
        }
        fmt_gpu(s, gpu, sizeof gpu);
        printf("%-24s %-10s %-12s %-8s %-6s %s\n", s->name, *dt ? dt : "none", dims, passes, gpu,
               s->summary);
        if (s->gpu_why || s->cc_min || s->cc_max) {
            printf("%-24s GPU: %s", "", s->gpu_why ? s->gpu_why : gpu);
            if (cc)
                printf("; this GPU (sm_%d) %s", cc, attn_gpu_fits(s, cc, NULL) ? "can run it" : "cannot");
            printf("\n");
        }
        const int nq_max = probe_nq_max(s, fwd);
        if (nq_max)
            printf("%-24s Nq: 1-%d only (decode: few queries against a long K/V cache; more is "
                   "another step's)\n", "", nq_max);
        const int gqa = probe_gqa(s, fwd, bwd);
        if (gqa)
            printf("%-24s GQA: takes grouped-query attention (H_kv < H), %s\n", "",
                   gqa == 2 ? "forward and backward" : "forward");
    }
    return 0;
}

/* ------------------------------------------------------------------------------- info */

static int cmd_info(int argc, char **argv)
{
    int rc = no_options(argc, argv, "info", info_usage);
    if (rc >= 0)
        return rc;
    char why[256];
    gpu_info g;
    if (!gpu_available(why, sizeof why))
        return cli_fail("info", "%s", why);
    if (!gpu_query(&g))
        return cli_fail("info", "cannot query the GPU");
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    printf("gpu=%s\nslug=%s\ngpu_mem_bytes=%zu\nsms=%d\ncompute_capability=%d.%d\nl2_bytes=%d\n"
           "cuda_runtime=%d.%d\ndriver_api=%d.%d\ndate=%s\n",
           g.name, g.slug, g.total_mem, g.sms, g.cc_major, g.cc_minor, g.l2_bytes,
           g.runtime_version / 1000, g.runtime_version % 1000 / 10, g.driver_version / 1000,
           g.driver_version % 1000 / 10, date);
    /* the memory's peak from its clock and bus width, as the driver reports them (H200: 4.8 TB/s
     * by the datasheet); the decode chart draws its roofline from it */
    if (g.hbm_peak_gbps > 0)
        printf("hbm_peak_gbps=%.0f\n", g.hbm_peak_gbps);
    return 0;
}

/* ------------------------------------------------------------------------------- check */

/* "normal", "large", "late" or "far" -> its input_mode, else -1 */
static int parse_input_mode(const char *s)
{
    for (int m = INPUT_NORMAL; m <= INPUT_FAR; m++)
        if (strcmp(s, input_mode_name((input_mode)m)) == 0)
            return m;
    return -1;
}

static int cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {
        {"step", required_argument, NULL, 's'}, {"steps", required_argument, NULL, 'S'},
        {"csv", required_argument, NULL, 'c'},  {"seed", required_argument, NULL, 'e'},
        {"inputs", required_argument, NULL, 'i'}, {"help", no_argument, NULL, 'h'},
        {"decode", no_argument, NULL, 'd'},       {"forward", no_argument, NULL, 'f'},
        {NULL, 0, NULL, 0}};
    const char *specs[MAX_STEPS];
    int nspecs = 0, c, mode = -1;
    const char *csv_path = NULL;
    uint64_t seed = (uint64_t)time(NULL);
    while ((c = cli_getopt(argc, argv, "h", opts, "check")) != -1) {
        switch (c) {
        case 's':
        case 'S':
            if (nspecs < MAX_STEPS)
                specs[nspecs++] = optarg;
            break;
        case 'c':
            csv_path = optarg;
            break;
        case 'd':
            check_set_max_queries(16);
            break;
        case 'f':
            check_set_forward_only(1);
            break;
        case 'i':
            if ((mode = parse_input_mode(optarg)) < 0)
                return cli_fail("check", "--inputs is normal, large, late or far, not '%s'", optarg);
            break;
        case 'e':
            if (!parse_u64(optarg, &seed))
                return cli_fail("check", "--seed takes a whole number >= 0, not '%s'", optarg);
            break;
        case 'h':
            fputs(check_usage, stdout);
            return 0;
        default:
            return 2;
        }
    }
    if (optind < argc)
        return cli_fail("check", "unexpected argument '%s'", argv[optind]);
    loaded_step all[MAX_STEPS];
    const int nall = load("check", all);
    if (nall < 0)
        return 2;
    const attn_step *sel[MAX_STEPS];
    int nsel = 0;
    char err[512];
    for (int i = 0; i < nspecs; i++)
        if (!parse_step_list(specs[i], all, nall, sel, MAX_STEPS, &nsel, err, sizeof err))
            return cli_fail("check", "%s", err);
    if (nsel == 0)
        for (int i = 0; i < nall; i++)
            sel[nsel++] = all[i].info;
    char why[256];
    if (!gpu_available(why, sizeof why))
        return cli_fail("check", "%s", why);
    FILE *csv = NULL;
    if (csv_path && !(csv = fopen(csv_path, "w")))
        return cli_fail("check", "cannot write %s", csv_path);
    check_totals tot;
    check_set_gpu_reference(steps_find(all, nall, "00"));   /* for the long cases */
    const int ok = check_run_all(sel, nsel, mode, seed, stdout, csv, &tot);
    if (csv)
        fclose(csv);
    if (!ok)
        return cli_fail("check", "stopped: the harness itself failed (see above)");
    return tot.count[V_FAIL] ? 1 : 0;
}

/* ------------------------------------------------------------------------------- run */

/* --dtype in any case ("BF16" too); parse_dtype itself, which also reads bench/sweeps.txt,
 * keeps the file format's lower case. */
static int parse_dtype_any_case(const char *s, attn_dtype *t)
{
    char low[8];
    size_t i = 0;
    for (; s[i] && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    low[i] = 0;
    return !s[i] && parse_dtype(low, t);
}

static int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"step", required_argument, NULL, 's'},   {"shape", required_argument, NULL, 'p'},
        {"dtype", required_argument, NULL, 't'},  {"causal", no_argument, NULL, 'c'},
        {"backward", no_argument, NULL, 'b'},     {"inputs", required_argument, NULL, 'i'},
        {"seed", required_argument, NULL, 'e'},   {"reps", required_argument, NULL, 'r'},
        {"deterministic", no_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *step_spec = NULL;
    attn_problem p;
    int have_shape = 0, have_dtype = 0, backward = 0, causal = 0, reps = 0, det = 0, c;
    attn_dtype dtype = ATTN_BF16;
    input_mode mode = INPUT_NORMAL;
    uint64_t seed = (uint64_t)time(NULL);
    char err[512];
    long n;
    while ((c = cli_getopt(argc, argv, "h", opts, "run")) != -1) {
        switch (c) {
        case 's':
            if (step_spec)
                return cli_fail("run", "--step is given twice (run measures one step; attn bench "
                                       "--steps takes a list)");
            step_spec = optarg;
            break;
        case 'p':
            if (have_shape)
                return cli_fail("run", "--shape is given twice (run measures one shape)");
            if (!parse_shape(optarg, &p, err, sizeof err))
                return cli_fail("run", "%s", err);
            have_shape = 1;
            break;
        case 't':
            if (!parse_dtype_any_case(optarg, &dtype))
                return cli_fail("run", "unknown dtype '%s' (fp32 or bf16)", optarg);
            have_dtype = 1;
            break;
        case 'c':
            causal = 1;
            break;
        case 'b':
            backward = 1;
            break;
        case 'd':
            det = 1;
            break;
        case 'i':
            if (parse_input_mode(optarg) < 0)
                return cli_fail("run", "--inputs is normal, large, late or far, not '%s'", optarg);
            mode = (input_mode)parse_input_mode(optarg);
            break;
        case 'e':
            if (!parse_u64(optarg, &seed))
                return cli_fail("run", "--seed takes a whole number >= 0, not '%s'", optarg);
            break;
        case 'r':
            if (!parse_long(optarg, 1, 100000, &n))
                return cli_fail("run", "--reps takes a whole number from 1 to 100000, not '%s'", optarg);
            reps = (int)n;
            break;
        case 'h':
            fputs(run_usage, stdout);
            return 0;
        default:
            return 2;
        }
    }
    if (optind < argc)
        return cli_fail("run", "unexpected argument '%s'", argv[optind]);
    if (!step_spec || !have_shape)
        return cli_fail("run", "--step and --shape are required (attn run --help)");
    loaded_step steps[MAX_STEPS];
    const int nsteps = load("run", steps);
    if (nsteps < 0)
        return 2;
    const attn_step *s = steps_find(steps, nsteps, step_spec);
    if (!s)
        return cli_fail("run", "unknown step '%s' (attn list shows them)", step_spec);
    p.causal = causal;
    p.deterministic = det;
    char shape[64], why[320];
    fmt_shape(&p, shape, sizeof shape);

    /* What needs no GPU first (the step's support, and its reason), then the GPU. */
    if (backward && !s->backward)
        return cli_fail("run", "%s is forward only", s->name);
    if (!have_dtype)
        dtype = default_dtype(s, &p, backward);
    p.dtype = dtype;
    const int have_gpu = gpu_available(why, sizeof why);
    gpu_info g;
    int cc = 0;
    if (have_gpu) {
        if (!gpu_query(&g))
            return cli_fail("run", "cannot query the GPU");
        cc = g.cc_major * 10 + g.cc_minor;
        const char *gw;
        if (!attn_gpu_fits(s, cc, &gw))
            return cli_fail("run", "SKIP: %s does not run on this GPU (%s, sm_%d): %s", s->name,
                            g.name, cc, gw);
    }
    const char *reason = NULL;
    if (s->supports(&p, backward, &reason) != ATTN_OK) {
        const char *other = other_reason(s, &p, backward);
        if (other)   /* the head dim (or whatever else) first, then the dtype */
            return cli_fail("run", "%s does not support %s %s%s%s: %s; and not %s in any case: %s",
                            s->name, shape, dtype_name(dtype), causal ? " causal" : "",
                            backward ? " backward" : "", other, dtype_name(dtype),
                            reason ? reason : "no reason given");
        return cli_fail("run", "%s does not support %s %s%s%s: %s", s->name, shape, dtype_name(dtype),
                        causal ? " causal" : "", backward ? " backward" : "",
                        reason ? reason : "no reason given");
    }
    if (!have_gpu)
        return cli_fail("run", "%s", why);
    if (!measure_fits(s, &p, backward, why, sizeof why))
        return cli_fail("run", "%s", why);

    gpu_timer timer;
    if (!gpu_setup(&g, &timer))
        return 2;
    printf("step       %s\n", s->name);
    printf("problem    B=%d H=%d Nq=%d Nk=%d D=%d %s %s, scale %.6g, %s, %s inputs, seed %llu\n",
           p.batch, p.heads, p.seq_q, p.seq_k, p.head_dim, dtype_name(dtype),
           causal ? "causal" : "non-causal", p.scale, backward ? "backward" : "forward",
           input_mode_name(mode), (unsigned long long)seed);
    printf("gpu        %s\n", g.name);

    /* The check: attn check's own checked run against the fp64 CPU reference when that takes
     * seconds (or, for a case of over 8e6 scores, against step 00 in fp32, as attn check does);
     * else step 00 on the same inputs where it fits, within twice the bounds; else a sample of
     * rows against the fp64 CPU reference (bench/measure.h). Every comparison is attn check's:
     * the whole tensor and each block of rows. */
    const double cpu_work = (double)p.batch * p.heads * visible_pairs(&p) * p.head_dim;
    int rc = 0;
    host_inputs in;
    outputs ref = {0};
    row_sample sample = {0};
    check_case cs;
    const int on_cpu = cpu_work <= 2e9;
    if (on_cpu) {
        check_result r;
        check_set_gpu_reference(steps_find(steps, nsteps, "00"));
        if (!case_prepare(&cs, &p, mode, seed, backward)) {
            gpu_teardown(&timer);
            return 2;
        }
        if (!case_run(&cs, s, backward, timer.stream, &r)) {
            case_free(&cs);
            gpu_teardown(&timer);
            return 2;
        }
        printf("check      vs %s:", cs.gpu_reference ? "step 00 in fp32 on the GPU"
                                                     : "the fp64 CPU reference");
        for (int t = 0; t < r.n; t++)
            printf(" %s rel-L2 %.2e (bound %.3g, worst block %.2e, bound %.3g)", r.t[t].name,
                   r.t[t].err.rel_l2, r.t[t].bound, r.t[t].err.block_rel_l2, r.t[t].block_bound);
        printf(" -> %s%s%s\n", verdict_name(r.v), r.why ? ": " : "", r.why ? r.why : "");
        if (r.v == V_FAIL) {
            check_print_failure(stdout, &cs, &r, s->name, backward);
            rc = 1;
        }
        in = cs.in;
    } else {
        if (!inputs_make_fast(&in, &p, seed)) {
            gpu_teardown(&timer);
            return 2;
        }
        const attn_step *s00 = steps_find(steps, nsteps, "0");
        char dummy[320];
        if (s00 && s00 != s && attn_gpu_fits(s00, cc, NULL) &&
            measure_fits(s00, &p, backward, dummy, sizeof dummy)) {
            measurement m0;
            measure(s00, &in, backward, cc, NULL, 1, &timer, &ref, &m0);
            if (m0.status != M_OK)
                outputs_free(&ref);
        }
        if (!ref.count && !sample_make(&sample, &in, backward, seed)) {
            inputs_free(&in);
            gpu_teardown(&timer);
            return cli_fail("run", "out of host memory for the sampled reference");
        }
    }
    measurement m;
    const reference against = {ref.count ? &ref : NULL, ref.count ? NULL : &sample};
    measure(s, &in, backward, cc, on_cpu ? NULL : &against, reps, &timer, NULL, &m);
    if (!on_cpu) {
        printf("check      vs %s", m.against[0] ? m.against
                                 : ref.count ? "step 00 on the same inputs (GPU)"
                                             : "sampled rows (fp64 CPU)");
        if (!ref.count && !backward)
            printf(", its reference computed in %.1f s", sample.seconds);
        if (!isnan(m.diff.err))
            printf(": worst %s rel-L2 %.2e (bound %.3g), worst block (b %d, h %d, tile %d) %.2e "
                   "(bound %.3g)", m.diff.tensor, m.diff.err, m.diff.bound, m.diff.block_b,
                   m.diff.block_h, m.diff.block_tile, m.diff.block_err, m.diff.block_bound);
        else
            printf(": not compared (the result says why)");
        printf("\n");
    }
    if (m.status != M_OK && m.status != M_XFAIL) {
        printf("result     %s: %s\n", m_status_name[m.status], m.why);
        rc = m.status == M_WRONG || m.status == M_CHANGED ? 1 : 2;
    } else {
        char ws[32];
        fmt_bytes((double)m.ws_bytes, ws, sizeof ws);
        if (m.status == M_XFAIL)
            printf("result     xfail: %s\n", m.why);
        printf("time       %.4f ms median (min %.4f, max %.4f; %d runs, L2 flushed before each)\n",
               m.t.median_ms, m.t.min_ms, m.t.max_ms, m.t.reps);
        printf("rate       %.2f TFLOP/s (%.3g FLOP)\n", m.tflops, attn_flops(&p, backward));
        printf("bandwidth  %.0f GB/s of K and V (%.3g bytes, each read once)\n",
               attn_kv_bytes(&p) / (m.t.median_ms * 1e-3) / 1e9, attn_kv_bytes(&p));
        printf("workspace  %s (%zu bytes)\n", ws, m.ws_bytes);
        printf("timed      the outputs after the timing loop match the first run's\n");
    }
    if (on_cpu)
        case_free(&cs);
    else
        inputs_free(&in);
    outputs_free(&ref);
    sample_free(&sample);
    gpu_teardown(&timer);
    return rc;
}

/* ------------------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: attn list|check|run|bench|info [options]; attn --help says more\n", stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        if (argc > 2)
            return cli_fail(NULL, "unexpected argument '%s' after %s", argv[2], cmd);
        fputs(usage, stdout);
        return 0;
    }
    /* The subcommand sees its own name as argv[0], so getopt starts after it. */
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"list", cmd_list}, {"check", cmd_check}, {"run", cmd_run},
                {"bench", cmd_bench}, {"info", cmd_info}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmd, cmds[i].name) == 0)
            return cmds[i].fn(argc - 1, argv + 1);
    return cli_fail(NULL, "unknown command '%s' (attn --help lists the commands)", cmd);
}
