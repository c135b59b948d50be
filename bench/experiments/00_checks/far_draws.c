/* far_draws.c: the kernel-like backward (check.c's check_kernel_like_backward) of
 * 1,16,2,65537,64,2 bf16 on far inputs, against the case's bounds as attn check sets them: one CSV
 * line per seed, dK's tensor and worst block (the block nearest its own bound). The kernel-like
 * backward is the H200's step 14 to the digit on the GPU tests' failing seed (5335231699872788336:
 * block (1, 406) 0.0464, element (h 1, key 26000, col 52) 0.066406 on both), so what it gives on
 * other seeds is what a kernel gives there. Built against build/libharness.a:
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -I/usr/local/cuda/include -Icommon \
 *       bench/experiments/00_checks/far_draws.c build/libharness.a -L/usr/local/cuda/lib64 \
 *       -lcudart -ldl -lm -o /tmp/far_draws
 *   for s in $(seq 101 300); do /tmp/far_draws $s 0; /tmp/far_draws $s 1; done > far_draws.csv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: far_draws SEED [CAUSAL]\n");
        return 2;
    }
    const unsigned long long seed = strtoull(argv[1], NULL, 10);
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = 1, p.heads = 16, p.heads_kv = 2, p.seq_q = 2, p.seq_k = 65537, p.head_dim = 64;
    p.causal = argc > 2 ? atoi(argv[2]) : 0;
    p.scale = 1.0f / 8.0f;
    p.dtype = ATTN_BF16;
    check_case c;
    if (!case_prepare(&c, &p, INPUT_FAR, seed, 1))
        return 1;
    float *dq = malloc(c.in.n_q * sizeof(float)), *dk = malloc(c.in.n_kv * sizeof(float));
    if (!dq || !dk)
        return 1;
    check_kernel_like_backward(&c, dq, dk);
    const double bound = fmax(check_bound(ATTN_BF16, "dK"), c.grad_floor[1]);
    const attn_err e = attn_compare_blocks_bounded(c.dk, dk, 2, p.seq_k, p.head_dim,
                                                   CHECK_BLOCK_ROWS, check_block_bound(bound),
                                                   c.block_floor[1]);
    printf("%llu,%d,%.4e,%.4e,%zu,%d,%.4e,%.4e,%d\n", seed, p.causal, e.rel_l2, bound, e.block_bh,
           e.block_tile, e.block_rel_l2, e.block_bound, attn_err_pass_blocks(&e, bound, e.block_bound));
    free(dq), free(dk);
    case_free(&c);
    return 0;
}
