/* far_floor: the bounds attn check holds a backward to on far inputs, computed on the CPU (no
 * GPU): for each "shape,flags,seed" row of far_fp32_seeds.csv (stdin), fp32, the dQ, dK, dV
 * floors of check.c's grad_floor (the gradient models' error times grad_floor_factor, or the
 * spread of dP - D) as the current common/check.c computes them.
 * Build: gcc -O2 -std=c11 -D_GNU_SOURCE -Icommon -I$CUDA/include -o build/far_floor
 *        bench/experiments/00_checks/far_floor.c build/libharness.a -L$CUDA/lib64 -lcudart -lm
 * Use:   build/far_floor < far_fp32_seeds.csv > floors.csv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "harness.h"

int main(void)
{
    char line[512], err[256];
    if (!fgets(line, sizeof line, stdin))
        return 2;
    printf("shape,flags,seed,dq_floor,dk_floor,dv_floor\n");
    while (fgets(line, sizeof line, stdin)) {
        char shape[64], flags[32];
        unsigned long long seed;
        if (sscanf(line, "\"%63[^\"]\",%31[^,],%llu", shape, flags, &seed) != 3)
            continue;
        attn_problem p;
        memset(&p, 0, sizeof p);
        if (!parse_shape(shape, &p, err, sizeof err))
            return fprintf(stderr, "far_floor: %s\n", err), 2;
        p.dtype = ATTN_FP32;
        p.causal = !strcmp(flags, "--causal");
        p.scale = (float)(1.0 / sqrt((double)p.head_dim));
        check_case c;
        if (!case_prepare(&c, &p, INPUT_FAR, seed, 1))
            return fprintf(stderr, "far_floor: out of memory\n"), 1;
        printf("\"%s\",%s,%llu,%.4g,%.4g,%.4g\n", shape, flags, seed, c.grad_floor[0],
               c.grad_floor[1], c.grad_floor[2]);
        case_free(&c);
    }
    return 0;
}
