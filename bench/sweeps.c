/* sweeps.c: reads bench/sweeps.txt, the sweeps that `attn bench` and bench/peer_sdpa.py share. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sweeps.h"

void sweeps_path(char *out, size_t n)
{
    const char *env = getenv("ATTN_SWEEPS_FILE");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return;
    }
    char exe[PATH_MAX - 32];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = len > 0 ? (exe[len] = 0, strrchr(exe, '/')) : NULL;
    if (!slash) {
        snprintf(out, n, "bench/sweeps.txt");
        return;
    }
    *slash = 0;
    char path[PATH_MAX], real[PATH_MAX];
    snprintf(path, sizeof path, "%s/../bench/sweeps.txt", exe);
    snprintf(out, n, "%s", realpath(path, real) ? real : path);   /* without the "build/.." */
}

/* Appends `word` to the list "a, b, c" unless it is there already. */
static void add_name(char *names, size_t n, const char *word)
{
    const size_t w = strlen(word);
    for (const char *c = names; *c;) {
        const char *sep = strstr(c, ", ");
        const size_t len = sep ? (size_t)(sep - c) : strlen(c);
        if (len == w && strncmp(c, word, w) == 0)
            return;
        c = sep ? sep + 2 : c + len;
    }
    const size_t used = strlen(names);
    if (used < n)
        snprintf(names + used, n - used, "%s%s", used ? ", " : "", word);
}

int sweeps_read(const char *path, const char *name, int quick, sweep_config *out, int max,
                char *err, size_t errn)
{
    char names[256];
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errn, "cannot read the sweeps file %s", path);
        return -1;
    }
    names[0] = 0;
    char line[512];
    int count = 0, lineno = 0, rc = 0, known = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *field[7], *save = NULL;
        int nf = 0;
        for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save))
            if (nf < 7)
                field[nf++] = t;
        if (nf == 0)
            continue;
        char why[256] = "";
        attn_problem p;
        attn_dtype dtype;
        const char *passes = nf == 6 ? field[4] : "";
        if (nf != 6)
            snprintf(why, sizeof why, "expected 6 fields (sweep dtype shape causal passes quick), got %s%d",
                     nf > 6 ? "more than " : "", nf > 6 ? 6 : nf);
        else if (!parse_dtype(field[1], &dtype))
            snprintf(why, sizeof why, "dtype '%s' is not fp32 or bf16", field[1]);
        else if (!parse_shape(field[2], &p, why, sizeof why))
            ;
        else if (strcmp(field[3], "0") && strcmp(field[3], "1"))
            snprintf(why, sizeof why, "causal '%s' is not 0 or 1", field[3]);
        else if (strcmp(passes, "fwd") && strcmp(passes, "bwd") && strcmp(passes, "fwd,bwd"))
            snprintf(why, sizeof why, "passes '%s' is not fwd, bwd or fwd,bwd", passes);
        else if (strcmp(field[5], "0") && strcmp(field[5], "1"))
            snprintf(why, sizeof why, "quick '%s' is not 0 or 1", field[5]);
        if (why[0]) {
            snprintf(err, errn, "%s:%d: %s", path, lineno, why);
            rc = -1;
            break;
        }
        add_name(names, sizeof names, field[0]);
        known |= strcmp(field[0], name) == 0;
        if (strcmp(field[0], name) || (quick && field[5][0] != '1'))
            continue;
        p.dtype = dtype;
        p.causal = field[3][0] == '1';
        for (int bwd = 0; bwd < 2; bwd++) {
            if (!strstr(passes, bwd ? "bwd" : "fwd"))
                continue;
            if (count == max) {
                snprintf(err, errn, "%s: sweep %s has more than %d measurements", path, name, max);
                rc = -1;
                break;
            }
            out[count++] = (sweep_config){p, bwd, field[5][0] == '1'};
        }
    }
    fclose(f);
    if (rc == 0 && !known) {
        snprintf(err, errn, "unknown sweep '%s' (%s has: %s)", name, path, names[0] ? names : "none");
        rc = -1;
    }
    return rc ? rc : count;
}
