/* run_attn.h: run build/attn (found next to the test binary, in build/tests/..) and capture
 * what it prints, for the tests of the command line. */
#ifndef RUN_ATTN_H
#define RUN_ATTN_H
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Exit status of `attn args` (-1 if it did not exit), its stdout and stderr in out. */
static int run_attn(const char *args, char *out, size_t n)
{
    char exe[400], cmd[1024];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return -1;
    exe[len] = 0;
    *strrchr(exe, '/') = 0;
    snprintf(cmd, sizeof cmd, "%s/../attn %s 2>&1", exe, args);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    size_t got = fread(out, 1, n - 1, f);
    out[got] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif
