/* steps.c: find build/steps/NN_name.so and load each one's attn_step_info. */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* $ATTN_STEPS_DIR, else <exe dir>/steps (for build/attn), else <exe dir>/../steps (for the
 * test binaries in build/tests). */
static int steps_dir(char *out, size_t n)
{
    const char *env = getenv("ATTN_STEPS_DIR");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return is_dir(out);
    }
    char exe[PATH_MAX - 16];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return 0;
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    *slash = 0;
    snprintf(out, n, "%s/steps", exe);
    if (is_dir(out))
        return 1;
    snprintf(out, n, "%s/../steps", exe);
    return is_dir(out);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static step_load_error load_errors[MAX_STEPS];
static int n_load_errors;

int steps_load_errors(const step_load_error **out)
{
    *out = load_errors;
    return n_load_errors;
}

/* One .so that does not load (a missing library, a stale build, not a step at all) is recorded
 * with the loader's message and skipped: it must not take the other steps down. */
int steps_load(loaded_step *out, int max, char *err, size_t errn)
{
    n_load_errors = 0;
    char dir[PATH_MAX];
    if (!steps_dir(dir, sizeof dir)) {
        snprintf(err, errn, "no steps folder found (build the steps with make, or set ATTN_STEPS_DIR)");
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errn, "cannot open %s", dir);
        return -1;
    }
    char *names[MAX_STEPS];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_STEPS) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".so") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_name);
    int count = 0;
    for (int i = 0; i < n; i++) {
        if (count < max) {
            char path[PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            const char *msg = h ? NULL : dlerror();
            const attn_step *info = h ? dlsym(h, "attn_step_info") : NULL;
            if (h && !info)
                msg = "no attn_step_info symbol (not a step built against common/attention.h)";
            if (!info) {
                step_load_error *le = &load_errors[n_load_errors++];
                snprintf(le->file, sizeof le->file, "%s", names[i]);
                snprintf(le->error, sizeof le->error, "%s", msg ? msg : "unknown loader error");
                if (h)
                    dlclose(h);
            } else {
                out[count].info = info;
                out[count].handle = h;
                count++;
            }
        }
        free(names[i]);
    }
    if (count == 0) {
        if (n_load_errors)
            snprintf(err, errn, "no step in %s could be loaded; %s: %s", dir, load_errors[0].file,
                     load_errors[0].error);
        else
            snprintf(err, errn, "no steps in %s (run make)", dir);
        return -1;
    }
    return count;
}

void steps_report_load_errors(FILE *f, const char *prefix)
{
    for (int i = 0; i < n_load_errors; i++)
        fprintf(f, "%s: skipping %s: it does not load: %s\n", prefix, load_errors[i].file,
                load_errors[i].error);
}

const attn_step *steps_find(const loaded_step *s, int n, const char *spec)
{
    if (!spec || !*spec)
        return NULL;
    for (int i = 0; i < n; i++)            /* the full name */
        if (strcmp(s[i].info->name, spec) == 0)
            return s[i].info;
    char *end;
    long num = strtol(spec, &end, 10);     /* a number: "2" or "02" */
    if (*end == 0 && num >= 0)
        for (int i = 0; i < n; i++)
            if (atol(s[i].info->name) == num)
                return s[i].info;
    return NULL;
}
