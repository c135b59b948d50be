/* block_floor: the block floors of common/check.c (block_floor_add) against a kernel-like bf16
 * backward (check_kernel_like_backward, common/check.c), on the CPU, no GPU: every
 * short bf16 backward case of the grid at D = 64 and 128 (the fp64 reference fits the CPU), each
 * input kind, SEEDS seeds; for dQ and dK, the worst block's rel-L2 over its bound under the old
 * rule (2 x the tensor's bound) and the new (or the block's own floor). Prints the rows over 0.5 of
 * either, and a summary line on stderr.
 * Build: gcc -O2 -std=c11 -D_GNU_SOURCE -Icommon -I$CUDA/include -o build/block_floor
 *        bench/experiments/00_checks/block_floor.c build/libharness.a -L$CUDA/lib64 -lcudart -lm
 * Use:   build/block_floor SEEDS [MAX_NQ [far]] > rows.csv
 *        (block_floor_grid.csv: 3; block_floor_far16.csv: 30 16 far) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "harness.h"
int main(int argc, char **argv)
{
    int seeds = argc > 1 ? atoi(argv[1]) : 2;
    attn_problem grid[4096];
    int ng = check_grid(grid, 4096);
    double worst_old = 0, worst_new = 0, worst_t = 0;
    int cases = 0, fail_old = 0, fail_new = 0;
    const char *nm[2] = {"dQ", "dK"};
    printf("shape,causal,mode,seed,tensor,rel,bound,blk,blk_old_bound,blk_new_bound,ratio_old,ratio_new\n");
    for (int gi = 0; gi < ng; gi++) {
        attn_problem p = grid[gi];
        if (p.dtype != ATTN_BF16 || (p.head_dim != 64 && p.head_dim != 128)) continue;
        if ((double)p.batch * p.heads * p.seq_q * p.seq_k > 8e6) continue;
        if (argc > 2 && p.seq_q > atoi(argv[2])) continue;
        for (int m = (argc > 3 ? INPUT_FAR : INPUT_NORMAL); m <= INPUT_FAR; m++)
            for (int sd = 0; sd < seeds; sd++) {
                check_case c;
                uint64_t seed = 1000 + gi * 31 + m * 7 + sd * 100003;
                if (!case_prepare(&c, &p, (input_mode)m, seed, 1)) return 1;
                float *f[2] = {malloc(c.in.n_q * 4 + 4), malloc(c.in.n_kv * 4 + 4)};
                check_kernel_like_backward(&c, f[0], f[1]);
                const double *ex[2] = {c.dq, c.dk};
                size_t heads[2] = {(size_t)p.batch * p.heads, (size_t)p.batch * attn_heads_kv(&p)};
                int rows[2] = {p.seq_q, p.seq_k};
                for (int t = 0; t < 2; t++) {
                    double bound = fmax(check_bound(ATTN_BF16, nm[t]), c.grad_floor[t]);
                    double bb = check_block_bound(bound);
                    attn_err eo = attn_compare_blocks(ex[t], f[t], heads[t], rows[t], p.head_dim, 64);
                    attn_err en = attn_compare_blocks_bounded(ex[t], f[t], heads[t], rows[t], p.head_dim, 64, bb, c.block_floor[t]);
                    double ro = eo.block_rel_l2 / bb, rn = en.block_rel_l2 / en.block_bound, rt = eo.rel_l2 / bound;
                    if (ro > worst_old) worst_old = ro;
                    if (rn > worst_new) worst_new = rn;
                    if (rt > worst_t) worst_t = rt;
                    fail_old += ro > 1; fail_new += rn > 1;
                    if (ro > 0.5 || rn > 0.5)
                        printf("\"%d,%d,%d,%d,%d,%d\",%d,%d,%llu,%s,%.3g,%.3g,%.3g,%.3g,%.3g,%.3f,%.3f\n", p.batch, p.heads, p.seq_q, p.seq_k, p.head_dim, attn_heads_kv(&p),
                               p.causal, m, (unsigned long long)seed, nm[t], eo.rel_l2, bound, en.block_rel_l2, bb, en.block_bound, ro, rn);
                }
                cases++;
                free(f[0]); free(f[1]); case_free(&c);
            }
    }
    fprintf(stderr, "cases %d: worst block/bound old %.3f (fails %d), new %.3f (fails %d); worst tensor/bound %.3f\n",
            cases, worst_old, fail_old, worst_new, fail_new, worst_t);
    return 0;
}
