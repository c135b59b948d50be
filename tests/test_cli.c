/* CLI tests: what `attn` says to bad input, run as a subprocess (build/attn), and the parsing
 * helpers of common/cli.c. No GPU needed: every case here is decided before the GPU is asked. */
#include <criterion/criterion.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "run_attn.h"
#include "skips.h"

static char out[16384];

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Drop the lines that name a step whose .so does not load ("attn run: skipping 98_x.so: it does
 * not load: ..."): a broken step in build/steps is reported by every command, and must not
 * change what the command says about its own input. */
static void drop_load_warnings(char *s)
{
    char *w = s;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        const size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        const int warning = strstr(line, ": it does not load: ") &&
                            strstr(line, ": it does not load: ") < line + len;
        if (!warning) {
            memmove(w, line, len);
            w += len;
        }
        line += len;
    }
    *w = 0;
}

/* attn ARGS exits 2 with exactly one line that starts with PREFIX and contains SAYS. */
static void rejects(const char *args, const char *prefix, const char *says)
{
    const int rc = run_attn(args, out, sizeof out);
    drop_load_warnings(out);
    cr_expect(rc == 2, "attn %s: exit %d, expected 2; said:\n%s", args, rc, out);
    cr_expect(strncmp(out, prefix, strlen(prefix)) == 0, "attn %s: expected the prefix '%s', said:\n%s",
              args, prefix, out);
    cr_expect(strstr(out, says) != NULL, "attn %s: expected '%s', said:\n%s", args, says, out);
    cr_expect(lines(out) == 1, "attn %s: expected one line, said:\n%s", args, out);
}

/* ------------------------------------------------------------ unknown options, missing values */

Test(cli_options, unknown_option_is_named)
{
    rejects("run --frobnicate", "attn run: ", "unknown option --frobnicate");
    rejects("run --step 02 --shape 1,1,8,8,8 --frobnicate=3", "attn run: ", "unknown option --frobnicate");
    rejects("check --frobnicate", "attn check: ", "unknown option --frobnicate");
    rejects("bench --sweep standard --frobnicate", "attn bench: ", "unknown option --frobnicate");
    rejects("list --frobnicate", "attn list: ", "unknown option --frobnicate");
    rejects("info --frobnicate", "attn info: ", "unknown option --frobnicate");
    rejects("run -x", "attn run: ", "unknown option -x");
}

Test(cli_options, option_without_value_is_named)
{
    rejects("run --step", "attn run: ", "--step needs a value");
    rejects("run --shape 1,1,8,8,8 --step", "attn run: ", "--step needs a value");
    rejects("run --step --shape 1,1,8,8,8", "attn run: ", "--step needs a value");
    rejects("run --step 02 --shape", "attn run: ", "--shape needs a value");
    rejects("check --seed", "attn check: ", "--seed needs a value");
    rejects("check --step", "attn check: ", "--step needs a value");
    rejects("bench --sweep", "attn bench: ", "--sweep needs a value");
    rejects("bench --sweep standard --steps", "attn bench: ", "--steps needs a value");
}

Test(cli_options, flag_with_a_value_is_named)
{
    rejects("run --step 02 --shape 1,1,8,8,8 --causal=1", "attn run: ", "--causal takes no value");
}

Test(cli_options, stray_arguments_are_rejected)
{
    rejects("list extra", "attn list: ", "unexpected argument 'extra'");
    rejects("info extra", "attn info: ", "unexpected argument 'extra'");
    rejects("run --step 02 --shape 1,1,8,8,8 extra", "attn run: ", "unexpected argument 'extra'");
    rejects("check extra", "attn check: ", "unexpected argument 'extra'");
    rejects("bench --sweep standard extra", "attn bench: ", "unexpected argument 'extra'");
}

/* ------------------------------------------------------------------------------- help */

Test(cli_help, every_command_shows_its_options)
{
    static const struct { const char *cmd, *shows[3]; } cases[] = {
        {"run --help", {"usage: attn run", "--shape B,H,Nq,Nk,D", "--backward"}},
        {"run -h", {"usage: attn run", "--dtype fp32|bf16", "--reps N"}},
        {"run --help", {"(any case)", "default: bf16 if the step supports bf16", "else fp32"}},
        {"check --help", {"usage: attn check", "--csv FILE", "--seed N"}},
        {"bench --help", {"usage: attn bench", "--sweep NAME", "single_head"}},
        {"bench --help", {"N=32768 non-causal; forward and backward", "(no --dtype)", "--quick"}},
        {"list --help", {"usage: attn list", "head dims", "GPU"}},
        {"info --help", {"usage: attn info", "key=value", "GPU"}},
        {"--help", {"usage: attn <command>", "bench", "attn <command> --help"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int rc = run_attn(cases[i].cmd, out, sizeof out);
        cr_expect(rc == 0, "attn %s: exit %d:\n%s", cases[i].cmd, rc, out);
        for (int j = 0; j < 3; j++)
            cr_expect(strstr(out, cases[i].shows[j]), "attn %s does not show '%s':\n%s", cases[i].cmd,
                      cases[i].shows[j], out);
    }
    /* the standard sweep's N=32768 lines have a backward too (bench/sweeps.txt) */
    run_attn("bench --help", out, sizeof out);
    cr_expect(!strstr(out, "N=32768 forward)"), "attn bench --help says N=32768 is forward only:\n%s", out);
}

Test(cli_help, plain_attn_is_one_line_with_the_hint)
{
    const int rc = run_attn("", out, sizeof out);
    cr_expect(rc == 2 && lines(out) == 1 && strstr(out, "attn --help"), "plain attn: exit %d:\n%s", rc, out);
}

Test(cli_help, unknown_command)
{
    rejects("frobnicate", "attn: ", "unknown command 'frobnicate'");
}

/* ------------------------------------------------------------------ values that are wrong */

Test(cli_values, unknown_step_names_the_command)
{
    rejects("check --step 99", "attn check: ", "unknown step '99'");
    rejects("run --step 99 --shape 1,1,8,8,8", "attn run: ", "unknown step '99'");
    rejects("bench --sweep standard --steps 00,99", "attn bench: ", "unknown step '99'");
}

Test(cli_values, repeated_step_where_one_is_meant)
{
    rejects("run --step 02 --step 01 --shape 1,1,8,8,8", "attn run: ", "--step is given twice");
    rejects("run --step 02 --shape 1,1,8,8,8 --shape 1,1,9,9,8", "attn run: ", "--shape is given twice");
    rejects("bench --sweep standard --sweep single_head", "attn bench: ", "--sweep is given twice");
    rejects("bench --sweep standard --steps 00 --steps 02", "attn bench: ", "--steps is given twice");
    rejects("bench --sweep standard --steps 2,02", "attn bench: ", "step 02_ragged_mask is given twice");
    rejects("check --step 2 --step 02", "attn check: ", "step 02_ragged_mask is given twice");
}

Test(cli_values, empty_item_in_a_step_list)
{
    rejects("bench --sweep standard --steps 00,,02", "attn bench: ", "empty step in '00,,02'");
    rejects("bench --sweep standard --steps 00,", "attn bench: ", "empty step in '00,'");
    rejects("bench --sweep standard --steps ,00", "attn bench: ", "empty step in ',00'");
    rejects("check --steps 00,,02", "attn check: ", "empty step in '00,,02'");
}

Test(cli_values, shape_field_at_or_above_2_to_the_31)
{
    rejects("run --step 02 --shape 1,1,2147483648,8,64", "attn run: ", "Nq is above the limit 2147483647");
    rejects("run --step 02 --shape 1,1,8,8,99999999999999999999", "attn run: ", "D is above the limit 2147483647");
    rejects("run --step 02 --shape 4294967297,1,8,8,64", "attn run: ", "B is above the limit 2147483647");
    attn_problem p;
    char err[256];
    cr_expect(parse_shape("2147483647,1,1,1,1", &p, err, sizeof err) && p.batch == INT_MAX, "%s", err);
    cr_expect(!parse_shape("1,2147483648,1,1,1", &p, err, sizeof err) && strstr(err, "H is above the limit"),
              "%s", err);
}

/* Valid ints, past the contract's bounds (attention.h: ATTN_MAX_SEQ, ATTN_MAX_ELEMENTS) or a
 * step's own: refused with the reason before any size is computed from them (past them a byte
 * count wraps, or a row count wraps to 0 and is divided by). */
static int step_built(const char *nn);   /* below */

Test(cli_values, shape_past_the_contracts_bounds)
{
    rejects("run --step 02 --shape 1,1,8,1073741825,64", "attn run: ", "at most 2^30");
    rejects("run --step 02 --shape 1,33554432,1,1073741824,128 --dtype bf16", "attn run: ",
            "a tensor above 2^40 elements");
    if (step_built("15"))
        rejects("run --step 15 --shape 1,268435456,16,16,64,1 --dtype bf16", "attn run: ",
                "rows per K/V group above 2^31");
    rejects("run --step 00 --shape 1,2,1048576,1048576,8", "attn run: ",
            "the scores S, B*H*Nq*Nk, above 2^40 elements");
}

Test(cli_values, bad_shape_dtype_inputs_reps_seed)
{
    rejects("run --step 02 --shape 1,1,8,8", "attn run: ", "bad shape '1,1,8,8'");
    rejects("run --step 02 --shape 1,6,8,8,64,4", "attn run: ", "not a multiple of H_kv");
    /* what a step cannot do is refused before any GPU is looked for, with the step's reason */
    rejects("run --step 02 --shape 1,4,64,64,64,2", "attn run: ", "grouped-query attention");
    static char listing[16384];
    run_attn("list", listing, sizeof listing);
    static const char *const nondet[] = {"06_backward"};   /* 13 takes it (dQ in turns) */
    for (size_t i = 0; i < sizeof nondet / sizeof nondet[0]; i++)
        if (strstr(listing, nondet[i])) {   /* built here (not in tests/throwaway_steps.sh) */
            char args[128];
            snprintf(args, sizeof args, "run --step %.2s --shape 1,2,64,64,64 --backward --deterministic",
                     nondet[i]);
            rejects(args, "attn run: ", "no deterministic backward");
        }
    rejects("run --step 02 --shape 1,0,8,8,8", "attn run: ", "H must be a whole number >= 1");
    rejects("run --step 02 --shape 1,1,8,8,8 --dtype fp16", "attn run: ", "unknown dtype 'fp16'");
    rejects("run --step 02 --shape 1,1,8,8,8 --inputs huge", "attn run: ", "--inputs is normal, large, late or far");
    rejects("run --step 02 --shape 1,1,8,8,8 --reps 0", "attn run: ", "--reps takes a whole number");
    rejects("run --step 02 --shape 1,1,8,8,8 --seed -1", "attn run: ", "--seed takes a whole number");
    rejects("check --seed x", "attn check: ", "--seed takes a whole number");
    rejects("check --inputs huge", "attn check: ", "--inputs is normal, large, late or far");
    rejects("bench --sweep standard --reps x", "attn bench: ", "--reps takes a whole number");
    rejects("bench --sweep standard --dtype fp32", "attn bench: ", "--dtype is attn run's");
    rejects("run --step 02 --shape 1,1,8,8,8 --dtype bf16x", "attn run: ", "unknown dtype 'bf16x'");
    rejects("run --step 02 --shape 1,1,8,8,8 --dtype BF16BF16BF16", "attn run: ", "unknown dtype");
    rejects("run --step 02", "attn run: ", "--step and --shape are required");
    rejects("bench", "attn bench: ", "--sweep is required");
}

/* ------------------------------------------------------------------------------ sweeps */

Test(cli_sweeps, unknown_sweep_lists_the_sweeps)
{
    rejects("bench --sweep huge", "attn bench: ", "unknown sweep 'huge'");
    cr_expect(strstr(out, "standard, single_head, decode"), "%s", out);
    /* the old names are gone */
    rejects("bench --sweep blog", "attn bench: ", "unknown sweep 'blog'");
    rejects("bench --sweep seed1", "attn bench: ", "unknown sweep 'seed1'");
}

/* bench/sweeps.txt itself parses: the error is about the step, which comes after the file. */
Test(cli_sweeps, the_sweeps_file_parses)
{
    rejects("bench --sweep standard --steps 99", "attn bench: ", "unknown step '99'");
    rejects("bench --sweep single_head --quick --steps 99", "attn bench: ", "unknown step '99'");
}

static void bad_sweeps_file(const char *text, const char *says)
{
    char path[] = "/tmp/attn_sweeps_XXXXXX";
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    setenv("ATTN_SWEEPS_FILE", path, 1);
    rejects("bench --sweep standard", "attn bench: ", says);
    cr_expect(strstr(out, path) && strstr(out, ":2: "), "the line is not named: %s", out);
    unsetenv("ATTN_SWEEPS_FILE");
    unlink(path);
}

Test(cli_sweeps, a_bad_line_is_named)
{
    bad_sweeps_file("# a comment\nstandard bf16 4,8,1,1 0 fwd 0\n", "bad shape '4,8,1,1'");
    bad_sweeps_file("\nstandard fp16 4,8,1,1,64 0 fwd 0\n", "dtype 'fp16'");
    bad_sweeps_file("\nstandard bf16 4,8,1,1,64 2 fwd 0\n", "causal '2'");
    bad_sweeps_file("\nstandard bf16 4,8,1,1,64 0 bwd,fwd 0\n", "passes 'bwd,fwd'");
    bad_sweeps_file("\nstandard bf16 4,8,1,1,64 0 fwd\n", "expected 6 fields");
}

/* -------------------------------------------------------- checked before asking for a GPU */

/* The step's own limits are known without a GPU, so they are said first, GPU or not. */
Test(cli_order, step_support_before_the_gpu)
{
    rejects("run --step 01 --shape 1,1,8,8,64 --backward", "attn run: ", "01_online_softmax_16x16 is forward only");
    rejects("run --step 01 --shape 1,1,16,16,300", "attn run: ", "does not support 1,1,16,16,300 bf16");
}

/* The folder of this test binary (build/tests), where build/attn is found too. */
static const char *exe_dir(void)
{
    static char dir[400];
    if (!dir[0]) {
        const ssize_t len = readlink("/proc/self/exe", dir, sizeof dir - 1);
        cr_assert(len > 0);
        dir[len] = 0;
        *strrchr(dir, '/') = 0;
    }
    return dir;
}

/* Whether build/steps holds step NN (tests/throwaway_steps.sh builds only 00-02 in its copy). */
static int step_built(const char *nn)
{
    char pattern[512];
    glob_t g;
    snprintf(pattern, sizeof pattern, "%s/../steps/%s_*.so", exe_dir(), nn);
    const int found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return found;
}

/* A step that refuses both the head dim and the dtype names the head dim first: without --dtype
 * the default is bf16 (which step 03 takes), so the head dim is all it names; with --dtype fp32
 * the head dim comes first, then the dtype. */
static void head_dim_first(const char *args, const char *dtype_part)
{
    rejects(args, "attn run: ", "does not support ");
    const char *head = strstr(out, "head_dim") ? strstr(out, "head_dim") : strstr(out, "head dim");
    cr_expect(head != NULL, "attn %s: the head dim is not named:\n%s", args, out);
    if (dtype_part) {
        const char *dt = strstr(out, dtype_part);
        cr_expect(dt && head && head < dt, "attn %s: expected the head dim before '%s':\n%s", args,
                  dtype_part, out);
    } else {
        cr_expect(!strstr(out, "bf16 only"), "attn %s: the dtype is not what is wrong:\n%s", args, out);
    }
}

Test(cli_order, head_dim_named_before_the_dtype)
{
    if (!step_built("03") || !step_built("06"))
        cr_skip_test("steps 03 and 06 are not built here");
    head_dim_first("run --step 03 --shape 1,1,64,64,96", NULL);
    rejects("run --step 03 --shape 1,1,64,64,96", "attn run: ", "does not support 1,1,64,64,96 bf16: ");
    head_dim_first("run --step 03 --shape 1,1,64,64,96 --dtype fp32", "; and not fp32 in any case: ");
    head_dim_first("run --step 06 --shape 1,1,64,64,96 --dtype fp32 --backward",
                   "; and not fp32 in any case: ");
    /* only the dtype wrong: the dtype's reason alone */
    rejects("run --step 03 --shape 1,1,64,64,64 --dtype fp32", "attn run: ",
            "does not support 1,1,64,64,64 fp32: ");
    cr_expect(!strstr(out, "in any case"), "%s", out);
}

/* attn ARGS gets past the step's supports() with the dtype it chose: without a GPU it stops at
 * "no CUDA GPU"; with one it runs (or says the step does not run on this GPU), never "does not
 * support". */
static void accepted(const char *args)
{
    char why[256];
    const int rc = run_attn(args, out, sizeof out);
    drop_load_warnings(out);
    cr_expect(!strstr(out, "does not support") && !strstr(out, "unknown dtype"),
              "attn %s: exit %d, refused:\n%s", args, rc, out);
    if (!gpu_available(why, sizeof why))
        cr_expect(rc == 2 && strstr(out, "no CUDA GPU"), "attn %s: exit %d:\n%s", args, rc, out);
}

Test(cli_dtype, default_is_one_the_step_supports)
{
    if (step_built("03"))
        accepted("run --step 03 --shape 1,1,64,64,64");
    if (step_built("06"))
        accepted("run --step 06 --shape 1,1,64,64,128 --backward --causal");
    accepted("run --step 00 --shape 1,1,8,8,8");
    accepted("run --step 02 --shape 1,1,8,8,8 --dtype BF16");
    accepted("run --step 02 --shape 1,1,8,8,8 --dtype Fp32");
}

/* Every step header's "Run:" line (steps/NN_name/attention.cu) works as written. On a machine
 * with a GPU these would be real runs of big shapes; there the test skips. */
Test(cli_dtype, the_run_lines_of_the_step_headers)
{
    char why[256], cmd[600], line[512];
    if (gpu_available(why, sizeof why))
        cr_skip_test("a GPU is present; the Run: lines are checked on machines without one");
    snprintf(cmd, sizeof cmd, "grep -h '^ \\* Run:  *build/attn ' %s/../../steps/*/attention.cu",
             exe_dir());
    FILE *f = popen(cmd, "r");
    cr_assert(f);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char *args = strstr(line, "build/attn ") + strlen("build/attn "), nn[8] = "";
        args[strcspn(args, "[(\n")] = 0;          /* drop "[--causal]", "(needs an H100)" */
        for (char *e = args + strlen(args); e > args && e[-1] == ' ';)
            *--e = 0;
        n++;
        if (sscanf(args, "run --step %7[0-9]", nn) == 1 && !step_built(nn))
            continue;                             /* not built in this copy */
        accepted(args);
    }
    pclose(f);
    cr_expect(n >= 8, "found only %d Run: lines in steps/*/attention.cu", n);
}

Test(cli_order, without_a_gpu_every_command_says_so)
{
    char why[256];
    if (gpu_available(why, sizeof why))
        cr_skip_test("a GPU is present; the no-GPU message is tested on machines without one");
    rejects("check", "attn check: ", "no CUDA GPU");
    rejects("run --step 02 --shape 1,1,8,8,8", "attn run: ", "no CUDA GPU");
    rejects("bench --sweep single_head", "attn bench: ", "no CUDA GPU");
    rejects("info", "attn info: ", "no CUDA GPU");
}

/* ------------------------------------------------------------------------------ attn list */

Test(cli_list, works_without_a_gpu)
{
    const int rc = run_attn("list", out, sizeof out);
    cr_expect(rc == 0 && strstr(out, "head dims") && strstr(out, "GPU") && strstr(out, "00_materialized"),
              "attn list: exit %d:\n%s", rc, out);
}

/* The steps that take grouped-query attention say so on a line of their own, and only they:
 * step 00, step 14 and step 15 (where built), not step 13, whose kernels read one K/V head per
 * query head. A decode step (15: Nq <= 16) says so on a line of its own, and only it. */
Test(cli_list, names_the_steps_that_take_grouped_query_attention)
{
    const int rc = run_attn("list", out, sizeof out);
    cr_assert(rc == 0, "attn list: exit %d:\n%s", rc, out);
    const char *names[4] = {"00_materialized", "13_backward_wgmma", "14_gqa", "15_decode"};
    const int takes[4] = {1, 0, 1, 1}, decode[4] = {0, 0, 0, 1};
    for (int i = 0; i < 4; i++) {
        const char *at = strstr(out, names[i]);
        if (!at)
            continue;   /* not built here (tests/throwaway_steps.sh) */
        /* the lines under the step's own, up to the next step's */
        const char *next = strchr(at, '\n');
        int gqa = 0, nq = 0;
        while (next && next[1] == ' ') {
            const char *end = strchr(next + 1, '\n');
            const size_t len = end ? (size_t)(end - next - 1) : strlen(next + 1);
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1),
                     next + 1);
            gqa |= strstr(line, "GQA: takes grouped-query attention") != NULL;
            nq |= strstr(line, "Nq: 1-16 only (decode") != NULL;
            next = end;
        }
        cr_expect(gqa == takes[i], "attn list: %s %s a GQA line:\n%s", names[i],
                  gqa ? "has" : "lacks", out);
        cr_expect(nq == decode[i], "attn list: %s %s a decode (Nq: 1-16) line:\n%s", names[i],
                  nq ? "has" : "lacks", out);
    }
}

Test(cli_list, head_dims_as_exact_runs)
{
    unsigned char set[1025];
    char s[256];
    memset(set, 0, sizeof set);
    fmt_int_set(set, 1024, s, sizeof s);
    cr_expect_str_eq(s, "none");
    set[64] = set[128] = 1;
    fmt_int_set(set, 1024, s, sizeof s);
    cr_expect_str_eq(s, "64,128");
    memset(set, 0, sizeof set);
    for (int d = 1; d <= 128; d++)
        set[d] = 1;
    fmt_int_set(set, 1024, s, sizeof s);
    cr_expect_str_eq(s, "1-128");
    memset(set, 0, sizeof set);
    set[8] = 1;
    for (int d = 16; d <= 32; d++)
        set[d] = 1;
    set[1023] = set[1024] = 1;
    fmt_int_set(set, 1024, s, sizeof s);
    cr_expect_str_eq(s, "8,16-32,1023,1024");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) { report_skips(stats, "CLI"); }
