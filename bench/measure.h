/* measure.h: one timed measurement of one step on one problem (bench/measure.c says the method).
 * Used by `attn run` and `attn bench`; built on the harness in common/, which knows nothing of it. */
#ifndef MEASURE_H
#define MEASURE_H

#include "harness.h"

/* The outputs of one pass, widened to double: O and lse, or dQ, dK and dV. */
typedef struct {
    int count;
    const char *name[3];
    size_t n[3];
    double *x[3];
} outputs;
void outputs_free(outputs *o);

/* A row's status, as the CSV's status column spells it (m_status_name):
 *   ok           measured, and every check passed
 *   skip         the step does not run on this GPU (attn_gpu_fits; why says what it needs)
 *   unsupported  the step refuses the problem (forward only, dtype, head dim; why says)
 *   oom          the tensors and workspace do not fit in the GPU's free memory
 *   wrong        NaN/Inf, or a difference from the reference beyond the bound
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
    double err, err_bound;  /* against the reference: rel-L2 and bound of the tensor closest to
                               (or furthest past) its bound; NAN without a reference */
    const char *err_tensor; /* that tensor */
} measurement;

/* 1 if the step's tensors and workspace fit in the GPU's free memory; else 0 and a one-line
 * reason ("00_materialized needs 512.0 GiB of workspace for 4,8,...; the GPU has ... free"). */
int measure_fits(const attn_step *s, const attn_problem *p, int backward, char *msg, size_t n);

/* Runs step s on the inputs, on a GPU of compute capability cc (major*10+minor): the checked
 * first run (compared with ref, when given, within ref_scale x check_bound per tensor), then
 * reps timed runs (reps <= 0: adaptive), then the outputs once more against the first run's,
 * within check_bound. keep (may be NULL) receives the first run's outputs. */
void measure(const attn_step *s, const host_inputs *in, int backward, int cc, const outputs *ref,
             double ref_scale, int reps, gpu_timer *timer, outputs *keep, measurement *m);

/* The GPU's facts, and a stream with a timer (and its L2 flush buffer) on it. */
int gpu_setup(gpu_info *g, gpu_timer *timer);
void gpu_teardown(gpu_timer *timer);

#endif
