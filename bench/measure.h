/* measure.h: one timed measurement of one step on one problem (bench/measure.c says the method).
 * Used by `attn run` and `attn bench`; built on the harness in common/, which knows nothing of it. */
#ifndef MEASURE_H
#define MEASURE_H

#include "harness.h"

/* The outputs of one pass, widened to double: O and lse, or dQ, dK and dV. Tensor i is
 * [heads[i], rows[i], cols[i]] (heads = B*H, or B*H_kv for dK and dV), n[i] elements. */
typedef struct {
    int count;
    const char *name[3];
    size_t n[3];
    double *x[3];
    size_t heads[3];
    int rows[3], cols[3];
} outputs;
void outputs_free(outputs *o);

/* The reference of a shape that step 00 cannot hold (N = 32768: its workspace is B*H*Nq*Nk
 * floats): SAMPLE_ROWS rows per batch-head, the first, the last and the rest at random, checked
 * against the fp64 CPU reference computed for just those rows (common/reference.c), block by
 * block as attn check does (the rows of one head make one block). The forward's reference is
 * made once per shape (sample_make); the backward's depends on the O and lse of the step's own
 * forward, so measure() computes it for each step: dQ of the query rows, dK and dV of the key
 * rows. Cost at B = 4, H = 8, N = 32768: the forward's 32 heads x 32 rows x 32768 keys x 2D
 * multiply-adds (8.6e9 at D = 128) took 3 s at D = 64 and 8 s at D = 128 on one core of the
 * (2-core, no-GPU) development machine; the backward's, 3 Nk D per query row and 4 Nq D per key
 * row, 10 s and 22 s per step that has a backward (06 today). The standard sweep's two N = 32768
 * shapes, forward and backward, add about 45 s to `attn bench`. */
#define SAMPLE_ROWS 32
typedef struct {
    int nq, nk;             /* query and key rows per batch-head: SAMPLE_ROWS, or all if fewer */
    int *q_rows, *k_rows;   /* [B*H][nq], [B*H_kv][nk], ascending */
    outputs fwd;            /* the forward's O and lse on q_rows ([B*H, nq, D], [B*H, nq]); count 0
                               when made for the backward */
    double seconds;         /* the CPU time that took */
} row_sample;
int sample_make(row_sample *s, const host_inputs *in, int backward, uint64_t seed);
void sample_free(row_sample *s);

/* What the checked run of a measurement is compared with; both NULL: outputs checked finite
 * only. full: step 00's outputs on the same inputs (itself bf16 where the problem is, so within
 * twice the bounds); rows: a sample of rows against the fp64 CPU reference, within the bounds. */
typedef struct {
    const outputs *full;
    const row_sample *rows;
} reference;

/* The difference from a reference: the tensor closest to (or furthest past) its bounds, its
 * whole-tensor rel-L2 and its worst block's (CHECK_BLOCK_ROWS rows of one head, or the sampled
 * rows of one head), with their bounds. NAN when nothing was compared. */
typedef struct {
    const char *tensor;
    double err, bound;
    double block_err, block_bound;
    int block_b, block_h, block_tile;
} ref_diff;

/* A row's status, as the CSV's status column spells it (m_status_name):
 *   ok           measured, and every check passed
 *   skip         the step does not run on this GPU (attn_gpu_fits; why says what it needs)
 *   unsupported  the step refuses the problem (forward only, dtype, head dim; why says)
 *   oom          the tensors and workspace do not fit in the GPU's free memory
 *   wrong        NaN/Inf, or a difference from the reference beyond the bound (whole tensor
 *                or any block of rows)
 *   xfail        wrong as the step itself declares (known_bug): the time is real, the answer not
 *   changed      the outputs after the timing loop differ from the first run's: the step
 *                depends on what an earlier call left in the workspace or the outputs
 *   error        a CUDA error or a failed call */
typedef enum { M_OK, M_SKIP, M_UNSUPPORTED, M_OOM, M_WRONG, M_XFAIL, M_CHANGED, M_ERROR } m_status;
extern const char *const m_status_name[];

typedef struct {
    m_status status;
    char why[320];
    timing t;               /* t.reps == 0 when nothing was timed */
    double tflops;
    size_t ws_bytes;
    char against[96];       /* what the checked run was compared with: "step 00 on the same
                               inputs", "32 sampled rows per head (fp64 CPU)", "" (finite only) */
    ref_diff diff;          /* and how far it was */
} measurement;

/* 1 if the step's tensors and workspace fit in the GPU's free memory; else 0 and a one-line
 * reason ("00_materialized needs 512.0 GiB of workspace for 4,8,...; the GPU has ... free"). */
int measure_fits(const attn_step *s, const attn_problem *p, int backward, char *msg, size_t n);

/* Runs step s on the inputs, on a GPU of compute capability cc (major*10+minor): the checked
 * first run (compared with ref, when given: reference above), then reps timed runs (reps <= 0:
 * adaptive), then the outputs once more against the first run's, within check_bound. Every
 * comparison is attn check's: the whole tensor and each block of rows. keep (may be NULL)
 * receives the first run's outputs. */
void measure(const attn_step *s, const host_inputs *in, int backward, int cc, const reference *ref,
             int reps, gpu_timer *timer, outputs *keep, measurement *m);

/* The GPU's facts, and a stream with a timer (and its L2 flush buffer) on it. */
int gpu_setup(gpu_info *g, gpu_timer *timer);
void gpu_teardown(gpu_timer *timer);

#endif
