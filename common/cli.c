/* cli.c: parsing what a user types, the command line's one error style, FLOP counts, formatting.
 * Every `attn` subcommand parses its options with cli_getopt (getopt_long underneath) and reports
 * bad input with cli_fail, so every message reads "attn <command>: <what is wrong>". */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

int parse_long(const char *s, long lo, long hi, long *out)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

int parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

int parse_shape(const char *s, attn_problem *p, char *err, size_t errn)
{
    static const char *names[6] = {"B", "H", "Nq", "Nk", "D", "H_kv"};
    const char *c = s ? s : "";
    int fields = 1;
    for (const char *x = c; *x; x++)
        fields += *x == ',';
    if (fields != 5 && fields != 6) {
        snprintf(err, errn, "bad shape '%s': expected B,H,Nq,Nk,D[,H_kv], five or six whole numbers "
                 ">= 1 (got %d field%s)", c, fields, fields == 1 ? "" : "s");
        return 0;
    }
    long v[6];
    for (int n = 0; n < fields; n++) {
        char *end;
        errno = 0;
        v[n] = strtol(c, &end, 10);
        if (*c < '0' || *c > '9' || *end != (n < fields - 1 ? ',' : 0) || v[n] < 1) {
            snprintf(err, errn, "bad shape '%s': %s must be a whole number >= 1 (B,H,Nq,Nk,D[,H_kv])",
                     s, names[n]);
            return 0;
        }
        if (errno == ERANGE || v[n] > INT_MAX) {   /* the contract's fields are int */
            snprintf(err, errn, "bad shape '%s': %s is above the limit %d = 2^31 - 1 (B,H,Nq,Nk,D[,H_kv])",
                     s, names[n], INT_MAX);
            return 0;
        }
        c = end + 1;
    }
    if (fields == 6 && v[1] % v[5] != 0) {
        snprintf(err, errn, "bad shape '%s': H = %ld is not a multiple of H_kv = %ld (each K/V head "
                 "serves H / H_kv query heads)", s, v[1], v[5]);
        return 0;
    }
    memset(p, 0, sizeof *p);
    p->heads_kv = fields == 6 ? (int)v[5] : 0;
    p->batch = (int)v[0];
    p->heads = (int)v[1];
    p->seq_q = (int)v[2];
    p->seq_k = (int)v[3];
    p->head_dim = (int)v[4];
    p->dtype = ATTN_FP32;
    p->scale = (float)(1.0 / sqrt((double)p->head_dim));
    return 1;
}

int parse_dtype(const char *s, attn_dtype *t)
{
    if (s && strcmp(s, "fp32") == 0)
        *t = ATTN_FP32;
    else if (s && strcmp(s, "bf16") == 0)
        *t = ATTN_BF16;
    else
        return 0;
    return 1;
}

const char *dtype_name(attn_dtype t) { return t == ATTN_BF16 ? "bf16" : "fp32"; }

double visible_pairs(const attn_problem *p)
{
    const double nq = p->seq_q, nk = p->seq_k;
    if (!p->causal)
        return nq * nk;
    /* rows i < Nk see i+1 keys, rows i >= Nk see all Nk */
    const double full = nq < nk ? nq : nk;
    return full * (full + 1) / 2 + (nq - full) * nk;
}

double attn_flops(const attn_problem *p, int backward)
{
    double f = 4.0 * p->batch * p->heads * (double)p->head_dim * visible_pairs(p);
    return backward ? 2.5 * f : f;
}

double attn_kv_bytes(const attn_problem *p)
{
    return 2.0 * p->batch * attn_heads_kv(p) * (double)p->seq_k * p->head_dim *
           (double)attn_dtype_bytes(p->dtype);
}

void fmt_bytes(double b, char *out, size_t n)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024.0 && u < 5) {
        b /= 1024.0;
        u++;
    }
    snprintf(out, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

size_t tensor_bytes(const attn_problem *p, int backward)
{
    const size_t bh = (size_t)p->batch * p->heads, e = attn_dtype_bytes(p->dtype);
    const size_t bkv = (size_t)p->batch * attn_heads_kv(p);
    const size_t q = bh * p->seq_q * p->head_dim * e, kv = bkv * p->seq_k * p->head_dim * e;
    const size_t lse = bh * p->seq_q * sizeof(float);
    size_t total = 2 * q + 2 * kv + lse;     /* q, o, k, v, lse */
    if (backward)
        total += 2 * q + 2 * kv;            /* d_o, dq, dk, dv */
    return total;
}

void fmt_shape(const attn_problem *p, char *out, size_t n)
{
    if (attn_heads_kv(p) != p->heads)   /* grouped-query attention: H_kv as a sixth field */
        snprintf(out, n, "%d,%d,%d,%d,%d,%d", p->batch, p->heads, p->seq_q, p->seq_k, p->head_dim,
                 attn_heads_kv(p));
    else
        snprintf(out, n, "%d,%d,%d,%d,%d", p->batch, p->heads, p->seq_q, p->seq_k, p->head_dim);
}

/* ------------------------------------------------------------------------- the command line */

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "attn%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

/* The long option that argv[i] names ("--step=3" -> "--step"), for messages. */
static int option_len(const char *arg)
{
    const char *eq = strchr(arg, '=');
    return eq ? (int)(eq - arg) : (int)strlen(arg);
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char *cmd)
{
    char spec[64];
    snprintf(spec, sizeof spec, ":%s", shortopts);   /* ':' first: a missing value returns ':' */
    opterr = 0;
    int index = -1;
    const int c = getopt_long(argc, argv, spec, longopts, &index);
    /* The word that held the option: getopt has moved optind past it (and past its value). */
    const char *arg = optind - 1 >= 1 && optind - 1 < argc ? argv[optind - 1] : "";
    if (c == ':') {
        if (strncmp(arg, "--", 2) == 0)
            cli_fail(cmd, "%.*s needs a value", option_len(arg), arg);
        else
            cli_fail(cmd, "-%c needs a value", optopt);
        return '?';
    }
    if (c == '?') {
        if (strncmp(arg, "--", 2) == 0 && optopt)
            cli_fail(cmd, "%.*s takes no value", option_len(arg), arg);
        else if (strncmp(arg, "--", 2) == 0)
            cli_fail(cmd, "unknown option %.*s; attn %s --help lists the options", option_len(arg),
                     arg, cmd);
        else
            cli_fail(cmd, "unknown option -%c; attn %s --help lists the options", optopt, cmd);
        return '?';
    }
    /* "--step --shape 1,1,8,8,8": the value is missing; the next word is an option, not it. */
    if (c != -1 && index >= 0 && longopts[index].has_arg == required_argument && optarg &&
        optarg == arg && strncmp(optarg, "--", 2) == 0) {
        cli_fail(cmd, "--%s needs a value (got the option %s)", longopts[index].name, optarg);
        return '?';
    }
    return c;
}

int parse_step_list(const char *list, const loaded_step *all, int nall, const attn_step **sel,
                    int max, int *nsel, char *err, size_t errn)
{
    const char *c = list ? list : "";
    for (;;) {
        const char *comma = strchr(c, ',');
        const size_t len = comma ? (size_t)(comma - c) : strlen(c);
        char item[128];
        if (len == 0) {
            snprintf(err, errn, "empty step in '%s' (a list is S,S,...)", list ? list : "");
            return 0;
        }
        snprintf(item, sizeof item, "%.*s", (int)len, c);
        const attn_step *s = steps_find(all, nall, item);
        if (!s) {
            snprintf(err, errn, "unknown step '%s' (attn list shows them)", item);
            return 0;
        }
        for (int i = 0; i < *nsel; i++)
            if (sel[i] == s) {
                snprintf(err, errn, "step %s is given twice", s->name);
                return 0;
            }
        if (*nsel >= max) {
            snprintf(err, errn, "more than %d steps", max);
            return 0;
        }
        sel[(*nsel)++] = s;
        if (!comma)
            return 1;
        c = comma + 1;
    }
}

void fmt_int_set(const unsigned char *set, int n, char *out, size_t outn)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 1; i <= n; i++) {
        if (!set[i])
            continue;
        int j = i;
        while (j + 1 <= n && set[j + 1])
            j++;
        char run[32];
        if (j == i)
            snprintf(run, sizeof run, "%d", i);
        else if (j == i + 1)
            snprintf(run, sizeof run, "%d,%d", i, j);
        else
            snprintf(run, sizeof run, "%d-%d", i, j);
        if (len < outn)
            len += (size_t)snprintf(out + len, outn - len, "%s%s", len ? "," : "", run);
        i = j;
    }
    if (!out[0])
        snprintf(out, outn, "none");
}
