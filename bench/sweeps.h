/* sweeps.h: the benchmark sweeps, read from bench/sweeps.txt (its header says the format). */
#ifndef SWEEPS_H
#define SWEEPS_H

#include "harness.h"

typedef struct {
    attn_problem p;
    int backward;
    int quick;   /* part of the short run of --quick */
} sweep_config;

#define MAX_SWEEP_CONFIGS 256

/* The file: $ATTN_SWEEPS_FILE, else bench/sweeps.txt beside build/ (the executable's folder's
 * parent). */
void sweeps_path(char *out, size_t n);
/* The configs of sweep `name` in file order (a shape's fwd before its bwd), only the quick ones
 * when quick is set. Returns the count, or -1 with err set: a malformed line
 * ("bench/sweeps.txt:12: ..."), or a name that no line has ("unknown sweep 'x' (... has: a, b)"). */
int sweeps_read(const char *path, const char *name, int quick, sweep_config *out, int max,
                char *err, size_t errn);

#endif
