/* harness.h: the small, boring host-side toolkit every tool and test shares (C11).
 *   tensor.c     bf16 <-> fp32, seeded random inputs, device upload/download, NaN poisoning
 *   reference.c  the fp64 CPU reference: forward (O, lse), backward (dQ, dK, dV), online-softmax form
 *   metrics.c    rel-L2 over the whole tensor and over every block of rows; worst element; NaN
 *                and Inf never pass
 *   gpu.c        CUDA error reporting, device info, timing with an L2 flush
 *   steps.c      finding and loading build/steps/NN_name.so with dlopen
 *   cli.c        parsing shapes, dtypes, numbers and options; the CLI's error style; FLOP counts;
 *                formatting
 *   check.c      the shape grid and one checked run of one step against the reference
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "attention.h"

/* ---------------------------------------------------------------- tensor.c */
uint16_t attn_f32_to_bf16(float x);   /* round to nearest even; NaN stays NaN */
float attn_bf16_to_f32(uint16_t h);   /* exact */

typedef enum { INPUT_NORMAL = 0, INPUT_LARGE, INPUT_LATE, INPUT_FAR } input_mode;
const char *input_mode_name(input_mode m);

/* Host copies of the inputs, stored as float but holding exactly the values the GPU sees
 * (already rounded to bf16 when the problem is bf16), so the fp64 reference works from
 * the very same numbers. Element counts come from each tensor's own shape. */
typedef struct {
    attn_problem p;
    size_t n_q, n_kv, n_lse;   /* B*H*Nq*D (q, o, dq, d_o), B*H_kv*Nk*D (k, v, dk, dv), B*H*Nq */
    float *q, *k, *v, *d_o;
} host_inputs;

/* NORMAL: offset Gaussian data (means not zero).
 * LARGE:  q and k scaled so the scaled scores reach about +-50.
 * LATE:   keys ramp up along the sequence and the last 16 keys get a bump, so each row's
 *         maximum score sits in its last key tile and the running max moves on every tile.
 * FAR:    each row's scores all sit far from zero, about -200 ... -100 on even rows and +100 ...
 *         +200 on odd ones (lse from about -200 to +200): a masked or padded key that leaks in
 *         weighs exp(0 - lse), e^200 on the rows below zero. tensor.c says how. */
int inputs_make(host_inputs *in, const attn_problem *p, input_mode mode, uint64_t seed);
/* Fast uniform data (unit variance, offset means) for the benchmark's large shapes. */
int inputs_make_fast(host_inputs *in, const attn_problem *p, uint64_t seed);
void inputs_free(host_inputs *in);

/* Round a host float array to the problem dtype in place (no-op for fp32). */
void round_to_dtype(float *x, size_t n, attn_dtype t);

/* Device tensors. upload converts float -> dtype; download converts dtype -> float. */
int dev_alloc(void **ptr, size_t bytes, const char *what);
int dev_upload(void *dst, const float *src, size_t n, attn_dtype t);
int dev_download(float *dst, const void *src, size_t n, attn_dtype t);
/* Fill with 0xFF bytes: NaN in fp32 (0xFFFFFFFF) and in bf16 (0xFFFF), so an unwritten
 * element can never pass a check. */
int dev_poison(void *ptr, size_t bytes);

/* ---------------------------------------------------------------- reference.c */
/* How a model of a GPU kernel holds its intermediate values (ref_forward_scores, ref_backward). */
typedef enum { REF_EXACT = 0, REF_FP32_OPERANDS, REF_BF16_OPERANDS } ref_precision;
/* Direct fp64 reference: S = scale * Q K^T, causal mask, P = softmax(S), O = P V, lse. */
void ref_forward(const attn_problem *p, const float *q, const float *k, const float *v,
                 double *o, double *lse);
/* The same with each score held as a GPU holds it (REF_FP32_OPERANDS: an fp32 dot product, scaled
 * in fp32), the rest exact: an fp32 score's absolute error grows with |s| (eps |s|), and that is a
 * relative error of each probability, so scores far from zero cost any fp32 kernel this much.
 * check.c's forward floor uses it. */
void ref_forward_scores(const attn_problem *p, const float *q, const float *k, const float *v,
                        ref_precision scores, double *o, double *lse);
/* The forward of selected query rows only: row rows[bh * nrows + r] of batch-head bh (b*H + h),
 * for r < nrows; o is [B*H, nrows, D], lse [B*H, nrows]. The very numbers ref_forward gives on
 * those rows, for a cost of nrows * Nk * D per head: the reference of shapes too long for the
 * whole forward (a sample of rows). */
void ref_forward_rows(const attn_problem *p, const float *q, const float *k, const float *v,
                      const int *rows, int nrows, double *o, double *lse);
/* The same, computed the FlashAttention way: key tiles of `tile` keys, running max m,
 * running sum l and unnormalised accumulator, rescaled on every tile. Used by the tests
 * to show the recurrence gives the direct result. */
void ref_forward_tiled(const attn_problem *p, const float *q, const float *k, const float *v,
                       int tile, double *o, double *lse);
/* The backward as a function of exactly what a step's backward receives: q, k, v, the forward's
 * o and lse, and d_o. P = exp(S - lse), dV = P^T dO, dP = dO V^T, D = rowsum(dO * O),
 * dS = P * (dP - D), dQ = scale dS K, dK = scale dS^T Q. With the exact o and lse these are the
 * gradients of sum(dO * O). REF_EXACT computes it exactly (in fp64). REF_BF16_OPERANDS and
 * REF_FP32_OPERANDS round S, P, dP, D and dS to that precision where a GPU backward must hold
 * them (as stored values or as operands of the next product): the error that costs is the floor
 * any step of that precision can reach on these inputs. */
void ref_backward(const attn_problem *p, const float *q, const float *k, const float *v,
                  const float *o, const float *lse, const float *d_o, ref_precision operands,
                  double *dq, double *dk, double *dv);
/* The spread that D = rowsum(dO * O) and dP, each an fp32 dot product of D terms, legitimately
 * put into a GPU backward's dS: P_ij (dP_ij - D_i) cancels when row i's softmax is nearly one-hot
 * (dP of its top key ~ D_i), so a few ulps of either are the whole of that dS. Per element, 3
 * standard deviations of the fp32 rounding of dP_ij - D_i (each summed term by term), carried into
 * dQ and dK and added in squares over the rows and keys, as if independent (D_i's part is shared by
 * a row's keys, but where the spread matters the row is one-hot: one key): dq2 and dk2 get the
 * squares, [B*H, Nq, D] and [B*H, Nk, D]. dV does not depend on dS. check.c's grad_floor uses it. */
void ref_backward_spread(const attn_problem *p, const float *q, const float *k, const float *v,
                         const float *o, const float *lse, const float *d_o, double *dq2,
                         double *dk2);
/* The exact backward on selected rows: dQ of query rows q_rows[bh * nq_rows + r] ([B*H, nq_rows,
 * D]) and dK, dV of key rows k_rows[kvh * nk_rows + r] of K/V head kvh ([B*H_kv, nk_rows, D]); the
 * very numbers of ref_backward(..., REF_EXACT, ...) there. Cost per head: Nq * D (the D_i), 3 Nk * D per query
 * row, 4 Nq * D per key row. */
void ref_backward_rows(const attn_problem *p, const float *q, const float *k, const float *v,
                       const float *o, const float *lse, const float *d_o, const int *q_rows,
                       int nq_rows, const int *k_rows, int nk_rows, double *dq, double *dk,
                       double *dv);

/* ---------------------------------------------------------------- metrics.c */
typedef struct {
    double rel_l2;       /* ||got - ref|| / ||ref|| (NaN if anything is not finite); the RMS of
                            got - ref when ref is exactly zero */
    double max_abs;      /* worst |got - ref| */
    size_t worst;        /* flat index of the worst element (a non-finite one first) */
    double worst_ref, worst_got;
    size_t nonfinite;    /* elements of got that are NaN or Inf */
    /* The worst block of rows (attn_compare_blocks; attn_compare: the whole tensor, one block):
     * its rel-L2 (NaN if it holds a non-finite element), its batch-head b*H + h and its tile
     * index within the head (rows tile*block_rows ...; block_rows 0: the whole tensor). */
    double block_rel_l2;
    size_t block_bh;
    int block_tile, block_rows;
    double block_bound;  /* the bound that block is held to (attn_compare_blocks_bounded; 0 else) */
} attn_err;

attn_err attn_compare(const double *ref, const float *got, size_t n);
/* The same over a [heads, rows, cols] tensor (heads = B*H), and also over every block of
 * block_rows rows of one head (the last block of a head ragged): a block is a contiguous run
 * of block_rows * cols elements. A block's rel-L2 is ||got - ref|| over the block divided by
 * max(||ref|| over the block, sqrt(block elements) * ||ref|| / sqrt(n)): a block whose
 * reference is tiny (dK and dV of keys no query sees) is measured against the whole tensor's
 * RMS scaled to the block, not against its own near-zero norm. The worst block is reported
 * (a non-finite one first). */
attn_err attn_compare_blocks(const double *ref, const float *got, size_t heads, int rows, int cols,
                             int block_rows);
/* The same, each block held to its own bound: max(block_bound, block_floor[k]) for the k-th block
 * (heads first, then tiles: k = head * tiles + tile), or block_bound alone where block_floor is
 * NULL. The block reported is the one furthest over its bound (rel-L2 / bound; a non-finite one
 * first), with that bound in block_bound, so attn_err_pass_blocks(e, bound, e->block_bound) passes
 * only if every block is within its own. */
attn_err attn_compare_blocks_bounded(const double *ref, const float *got, size_t heads, int rows,
                                     int cols, int block_rows, double block_bound,
                                     const double *block_floor);
/* Written as !(x <= bound) so that NaN fails. The whole tensor only. */
int attn_err_pass(const attn_err *e, double bound);
/* The whole tensor within bound, every block within block_bound, every element finite. */
int attn_err_pass_blocks(const attn_err *e, double bound, double block_bound);
/* Flat index of a [B, H, N, C] tensor -> (b, h, row, col). */
void attn_unflatten(size_t idx, int heads, int rows, int cols, int out[4]);

/* ---------------------------------------------------------------- gpu.c */
/* Report a failed CUDA call on stderr ("CUDA error in WHAT: message"); returns 1 if ok. */
int cuda_ok(cudaError_t e, const char *what);
/* 1 if a CUDA device can be used; otherwise 0 and a one-line reason in why. */
int gpu_available(char *why, size_t n);

typedef struct {
    char name[256];
    char slug[64];           /* "NVIDIA H200" -> "h200": the bench/results/<slug>/ folder */
    size_t total_mem, free_mem;
    int l2_bytes, sms, cc_major, cc_minor, runtime_version, driver_version;
    double hbm_peak_gbps;    /* the memory's peak by its clock and bus width (2 transfers per
                                clock): what a decode step's GB/s are held against; 0 if unknown */
} gpu_info;
int gpu_query(gpu_info *g);
void gpu_slug(const char *name, char *out, size_t n);

typedef struct {
    cudaStream_t stream;
    cudaEvent_t start, stop;
    void *flush;             /* 2 x L2 bytes, rewritten before every timed launch */
    size_t flush_bytes;
} gpu_timer;
typedef struct { double median_ms, min_ms, max_ms; int reps; } timing;
typedef attn_status (*launch_fn)(void *ctx, cudaStream_t stream);

int timer_init(gpu_timer *t, cudaStream_t stream);
void timer_free(gpu_timer *t);
/* reps timed launches, each after an L2 flush; events around the launch only. The caller
 * has already run fn once (warm-up, and the checked run). */
attn_status timer_run(gpu_timer *t, launch_fn fn, void *ctx, int reps, timing *out);
/* Repetitions to spend about target_ms of timed work, given one run's time; within [lo, hi]. */
int timer_reps(double one_ms, double target_ms, int lo, int hi);

/* ---------------------------------------------------------------- steps.c */
typedef struct { const attn_step *info; void *handle; } loaded_step;
#define MAX_STEPS 64
/* Loads every build/steps/NN_*.so, sorted by name. The folder is $ATTN_STEPS_DIR, else
 * steps/ (or ../steps/) next to the executable. Returns the count, or -1 with err set when no
 * step at all could be loaded. A .so that fails to load is skipped and remembered with the
 * loader's message: steps_load_errors lists them, steps_report_load_errors prints one line each. */
int steps_load(loaded_step *out, int max, char *err, size_t errn);
typedef struct { char file[256]; char error[512]; } step_load_error;
int steps_load_errors(const step_load_error **out);
void steps_report_load_errors(FILE *f, const char *prefix);
/* "2", "02" or "02_ragged_mask" -> the step, or NULL. */
const attn_step *steps_find(const loaded_step *s, int n, const char *spec);

/* ---------------------------------------------------------------- cli.c */
/* "B,H,Nq,Nk,D" -> problem (dtype fp32, not causal, scale 1/sqrt(D)). 0 and err on failure. */
int parse_shape(const char *s, attn_problem *p, char *err, size_t errn);
int parse_dtype(const char *s, attn_dtype *t);
/* Whole decimal number in [lo, hi]. */
int parse_long(const char *s, long lo, long hi, long *out);
int parse_u64(const char *s, uint64_t *out);   /* a seed: any whole number below 2^64 */
const char *dtype_name(attn_dtype t);
/* Query-key pairs that are not masked: Nq*Nk, or sum_i min(i+1, Nk) when causal. */
double visible_pairs(const attn_problem *p);
/* 4 * B * H * D * visible pairs; backward 2.5x the forward. */
double attn_flops(const attn_problem *p, int backward);
/* Bytes of K and V, 2 * B * H_kv * Nk * D * the dtype's size: what a decode step must read at
 * least once (the GB/s of the decode sweep are these bytes over the median time). */
double attn_kv_bytes(const attn_problem *p);
/* "512.0 GiB" */
void fmt_bytes(double bytes, char *out, size_t n);
/* Device bytes of Q, K, V, O, lse (+ dO, dQ, dK, dV for the backward). */
size_t tensor_bytes(const attn_problem *p, int backward);
void fmt_shape(const attn_problem *p, char *out, size_t n);   /* "B,H,Nq,Nk,D" */

/* The command line's one error style: "attn CMD: message" on stderr (CMD NULL: "attn: ...").
 * Returns 2, the exit status for bad input. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* getopt_long (<getopt.h>) for subcommand CMD, with messages in cli_fail's style that name the
 * option: "unknown option --frobnicate", "--step needs a value", "--causal takes no value".
 * Returns the option's value, -1 after the last option, or '?' once the message is printed. */
struct option;
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char *cmd);
/* "00,2,02_ragged_mask" -> the steps, appended to sel[*nsel..max). 0 and err on an empty item,
 * an unknown step or one given twice. */
int parse_step_list(const char *list, const loaded_step *all, int nall, const attn_step **sel,
                    int max, int *nsel, char *err, size_t errn);
/* The members of set[1..n] (set[i] != 0) as runs: "1-128", "64,128", "8,16-32"; "none" if empty. */
void fmt_int_set(const unsigned char *set, int n, char *out, size_t outn);

/* ---------------------------------------------------------------- check.c */
typedef enum { V_PASS = 0, V_FAIL, V_XFAIL, V_XPASS, V_SKIP } verdict;
const char *verdict_name(verdict v);

/* The shape grid x dtype x causal, in a fixed order (check.c lists the shapes and why): at most
 * max cases, the first max where it has more. attn check holds CHECK_GRID_MAX (a CPU test says
 * the grid fits). */
#define CHECK_GRID_MAX 256
int check_grid(attn_problem *out, int max);
/* Long grid cases (too slow for the fp64 CPU reference) use this step, run in fp32 on the GPU,
 * as their reference: step 00, itself checked against the CPU. Without it they are SKIP. */
void check_set_gpu_reference(const attn_step *step00);
/* Only the grid's cases of at most nq queries (0: all, the default): attn check --decode. Each
 * case keeps the seed it has in the whole grid. */
void check_set_max_queries(int nq);
/* 1: forward passes only (attn check --forward): no backward runs and no backward references. */
void check_set_forward_only(int on);
/* The bound on rel-L2 per dtype and tensor ("O", "lse", "dQ", "dK", "dV"); check.c says where
 * each number comes from. */
double check_bound(attn_dtype t, const char *tensor);
/* The blocks of the local metric: CHECK_BLOCK_ROWS rows of one head, a query tile for O, lse and
 * dQ, a key tile for dK and dV. Each block is held to check_block_bound(the tensor's bound), a
 * fixed multiple of it, or a gradient's block to its own floor where that is larger (check.c says
 * why). */
#define CHECK_BLOCK_ROWS 64
double check_block_bound(double tensor_bound);

/* One prepared case: inputs and the fp64 reference, shared by every step that runs it. */
typedef struct {
    attn_problem p;
    input_mode mode;
    uint64_t seed;
    host_inputs in;
    double *o, *lse;                  /* forward reference */
    float *bwd_o, *bwd_lse;           /* what the backward receives: o rounded to the dtype, lse */
    double *dq, *dk, *dv;             /* backward reference from those; NULL without backward */
    double o_floor;                   /* O: twice the error that fp32 scores alone cost on
                                         these inputs; check.c */
    double lse_floor;                 /* lse: the same model's error, by the gradients' rule */
    double grad_floor[3];             /* dQ, dK, dV: twice the error that operands of the
                                         dtype's precision alone cost on these inputs; check.c */
    double *block_floor[3];           /* the same floor of each block of CHECK_BLOCK_ROWS rows
                                         (head by head, tile by tile), from the block's own
                                         elements; NULL where there is none */
    int gpu_reference;                /* 1: a long case, its reference is step 00 in fp32 */
    const char *skip_why;             /* set when the case has no usable reference */
    const char *bwd_skip_why;         /* set when its backward has no usable bound */
} check_case;
int case_prepare(check_case *c, const attn_problem *p, input_mode mode, uint64_t seed,
                 int with_backward);
void case_free(check_case *c);
/* A bf16 backward as a kernel computes it, from the case's inputs (S, dP, D and every sum in fp32,
 * P and dS rounded to bf16, D from its own sum), dQ and dK rounded to the dtype: what the tests
 * and bench/experiments/00_checks hold the gradient floors against, on the CPU. */
void check_kernel_like_backward(const check_case *c, float *dq, float *dk);

typedef struct {
    const char *name;   /* "O", "lse", "dQ", "dK", "dV" */
    attn_err err;       /* whole tensor, and its worst block of CHECK_BLOCK_ROWS rows */
    double bound;       /* on the whole tensor's rel-L2 */
    double block_bound; /* on every block's */
    int pass;           /* both within their bounds, every element finite */
    int rows, cols;     /* for naming the worst element: [B, H, rows, cols] */
} tensor_result;

typedef struct {
    verdict v;
    const char *why;            /* skip reason, known bug, or what failed */
    int n;
    tensor_result t[3];
} check_result;

/* Runs one step (forward, or backward from the reference O and lse) on the case, on the GPU,
 * with poisoned outputs, and compares every output. Returns 0 only when the harness itself
 * failed (allocation, CUDA error); a wrong answer is a returned FAIL. */
int case_run(const check_case *c, const attn_step *s, int backward, cudaStream_t stream,
             check_result *r);
/* The case, one line per tensor with its worst element and worst block, and the command that
 * reproduces it. */
void check_print_failure(FILE *f, const check_case *c, const check_result *r, const char *step,
                         int backward);

/* Every selected step on the grid (mode -1: all three input modes, else that one), forward and
 * backward where a step has one. One line per case on `log` (may be NULL), failures in detail,
 * a summary at the end; one row per tensor on `csv` (may be NULL). Returns 0 only when the
 * harness itself failed. */
typedef struct {
    int count[5];         /* cases per verdict */
    int ran[MAX_STEPS];   /* per selected step: cases that ran (not SKIP) */
} check_totals;
int check_run_all(const attn_step *const *steps, int nsteps, int mode, uint64_t seed, FILE *log,
                  FILE *csv, check_totals *totals);

#endif
