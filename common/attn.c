/* attn: the front door. list, check, run, bench, info. See `attn --help`. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness.h"

/* bench/bench.c */
int cmd_run(int argc, char **argv, const loaded_step *steps, int nsteps);
int cmd_bench(int argc, char **argv, const loaded_step *steps, int nsteps);

static const char *usage =
    "usage: attn <command> [options]\n"
    "\n"
    "  list                          the steps: the idea each adds, what each supports\n"
    "  check [--step S]... [--csv FILE] [--seed N]\n"
    "                                every step on the shape grid against the fp64 reference:\n"
    "                                fp32 and bf16, causal and not, normal/large/late inputs,\n"
    "                                forward and backward; PASS/FAIL/XFAIL/XPASS/SKIP per case\n"
    "  run --step S --shape B,H,Nq,Nk,D [--dtype fp32|bf16] [--causal] [--backward]\n"
    "      [--inputs normal|large|late] [--seed N] [--reps N]\n"
    "                                one checked run and one timed measurement\n"
    "  bench --sweep blog|seed1 [--steps S,S,...] [--out FILE.csv] [--quick]\n"
    "                                the benchmark sweep, one CSV row per measurement\n"
    "  info                          the GPU as key=value lines\n"
    "\n"
    "S is a step number (2, 02) or name (02_ragged_mask). Exit status: 0 ok, 1 a check failed,\n"
    "2 bad input or no usable GPU.\n";

static int bad(const char *msg)
{
    fprintf(stderr, "attn: %s\n", msg);
    return 2;
}

/* What a step supports, found by asking supports() (pure host code, no GPU needed). */
static void describe_support(const attn_step *s, char *out, size_t n)
{
    char dt[64] = "", dims[64] = "";
    for (int t = 0; t < 2; t++) {
        attn_problem p = {1, 1, 64, 64, 64, 0, t ? ATTN_BF16 : ATTN_FP32, 0.125f};
        const char *why;
        if (s->supports(&p, 0, &why) == ATTN_OK)
            snprintf(dt + strlen(dt), sizeof dt - strlen(dt), "%s%s", *dt ? " " : "",
                     dtype_name(p.dtype));
    }
    int lo = 0, hi = 0;
    for (int d = 1; d <= 1024; d++) {
        attn_problem p = {1, 1, 64, 64, d, 0, ATTN_BF16, 0.125f};
        const char *why;
        if (s->supports(&p, 0, &why) == ATTN_OK) {
            if (!lo)
                lo = d;
            hi = d;
        }
    }
    if (lo)
        snprintf(dims, sizeof dims, hi == 1024 ? "D >= %d" : "D %d-%d", lo, hi);
    else
        snprintf(dims, sizeof dims, "no bf16 D");
    attn_problem p = {1, 1, 64, 64, 64, 0, ATTN_BF16, 0.125f};
    const char *why;
    int bwd = s->backward && s->supports(&p, 1, &why) == ATTN_OK;
    snprintf(out, n, "%-10s %-10s %-8s", dt, dims, bwd ? "fwd+bwd" : "fwd");
}

static int cmd_list(const loaded_step *steps, int n)
{
    printf("%-24s %-10s %-10s %-8s %s\n", "step", "dtypes", "head dims", "passes", "the idea it adds");
    for (int i = 0; i < n; i++) {
        char sup[128];
        describe_support(steps[i].info, sup, sizeof sup);
        printf("%-24s %s %s\n", steps[i].info->name, sup, steps[i].info->summary);
    }
    return 0;
}

static int cmd_info(void)
{
    char why[256];
    gpu_info g;
    if (!gpu_available(why, sizeof why))
        return bad(why);
    if (!gpu_query(&g))
        return bad("cannot query the GPU");
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    printf("gpu=%s\nslug=%s\ngpu_mem_bytes=%zu\nsms=%d\ncompute_capability=%d.%d\nl2_bytes=%d\n"
           "cuda_runtime=%d.%d\ndriver_api=%d.%d\ndate=%s\n",
           g.name, g.slug, g.total_mem, g.sms, g.cc_major, g.cc_minor, g.l2_bytes,
           g.runtime_version / 1000, g.runtime_version % 1000 / 10, g.driver_version / 1000,
           g.driver_version % 1000 / 10, date);
    return 0;
}

/* ------------------------------------------------------------------------------- check */

static int cmd_check(int argc, char **argv, const loaded_step *all, int nall)
{
    const attn_step *sel[MAX_STEPS];
    int nsel = 0;
    const char *csv_path = NULL;
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--step") == 0 && i + 1 < argc) {
            const attn_step *s = steps_find(all, nall, argv[++i]);
            if (!s) {
                fprintf(stderr, "attn: unknown step '%s' (attn list shows them)\n", argv[i]);
                return 2;
            }
            if (nsel < MAX_STEPS)
                sel[nsel++] = s;
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv_path = argv[++i];
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            if (!parse_u64(argv[++i], &seed))
                return bad("--seed takes a whole number >= 0");
        } else {
            fprintf(stderr, "attn check: unknown or incomplete option '%s'; attn --help shows the options\n",
                    argv[i]);
            return 2;
        }
    }
    if (nsel == 0)
        for (int i = 0; i < nall; i++)
            sel[nsel++] = all[i].info;
    char why[256];
    if (!gpu_available(why, sizeof why))
        return bad(why);
    FILE *csv = NULL;
    if (csv_path && !(csv = fopen(csv_path, "w"))) {
        fprintf(stderr, "attn: cannot write %s\n", csv_path);
        return 2;
    }
    check_totals tot;
    check_set_gpu_reference(steps_find(all, nall, "00"));
    steps_report_load_errors(stdout, "attn check");
    const int ok = check_run_all(sel, nsel, -1, seed, stdout, csv, &tot);
    if (csv)
        fclose(csv);
    if (!ok) {
        fprintf(stderr, "attn check: stopped: the harness itself failed (see above)\n");
        return 2;
    }
    return tot.count[V_FAIL] ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "info") == 0)
        return cmd_info();
    if (strcmp(cmd, "list") && strcmp(cmd, "check") && strcmp(cmd, "run") && strcmp(cmd, "bench")) {
        fprintf(stderr, "attn: unknown command '%s' (attn --help lists the commands)\n", cmd);
        return 2;
    }
    loaded_step steps[MAX_STEPS];
    char err[512];
    int n = steps_load(steps, MAX_STEPS, err, sizeof err);
    if (n < 0)
        return bad(err);
    if (strcmp(cmd, "list") == 0)
        return cmd_list(steps, n);
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc - 2, argv + 2, steps, n);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2, steps, n);
    return cmd_bench(argc - 2, argv + 2, steps, n);
}
