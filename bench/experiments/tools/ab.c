/* ab: time several builds of a step against each other, interleaved, GPU time only, no checks
 * (attn check and attn run check; this only times). Every variant sees the same random bf16
 * inputs; the backward gets its O and lse from the first variant's forward. For each shape and
 * round, the variants take turns launch by launch (--reps each, L2 flushed before each launch),
 * so a drift of the GPU's clock under sustained load moves all variants alike; each row is one
 * variant's median of one round.
 *   ab [--backward] [--rounds R] [--reps N] [--normal] --shape B,H,Nq,Nk,D[,c] ... A.so B.so[:det] ...
 * The inputs are attn bench's (uniform, inputs_make_fast) unless --normal: attn check's normal
 * inputs (Gaussian, inputs_make), to see whether the data moves the time.
 * A variant named X.so:det runs X.so with the problem's deterministic = 1.
 * With AB_TRACE_DIR set, a variant whose .so exports attn_trace_dump(path) (a build with a
 * timeline trace, e.g. ../12_fwd_timeline) runs once more after the rounds of each shape and
 * writes AB_TRACE_DIR/<variant file name>_<shape index>.csv.
 * Prints CSV: variant,pass,shape,causal,round,ms_median,ms_min,tflops,gbps (gbps: the bytes of K
 * and V over the median, what a decode step is read in).
 * Build: gcc -O2 -std=c11 -D_GNU_SOURCE -Icommon -I$CUDA/include -o build/ab
 *        bench/experiments/tools/ab.c build/libharness.a -L$CUDA/lib64 -lcudart -ldl -lm */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "harness.h"

typedef struct {
    const attn_step *s;
    const attn_problem *p;
    int bwd;
    void *q, *k, *v, *o, *lse, *d_o, *dq, *dk, *dv, *ws;
} ctx_t;

static attn_status launch(void *c_, cudaStream_t st)
{
    ctx_t *c = c_;
    if (!c->bwd)
        return c->s->forward(c->p, c->q, c->k, c->v, c->o, c->lse, c->ws, st);
    return c->s->backward(c->p, c->q, c->k, c->v, c->o, c->lse, c->d_o, c->dq, c->dk, c->dv, c->ws,
                          st);
}

int main(int argc, char **argv)
{
    int bwd = 0, rounds = 3, reps = 20, nshape = 0, nvar = 0, normal = 0;
    attn_problem shapes[32];
    const attn_step *var[16];
    const char *vname[16];
    int (*vdump[16])(const char *) = {0};
    int vdet[16] = {0};
    char err[256];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backward"))
            bwd = 1;
        else if (!strcmp(argv[i], "--normal"))
            normal = 1;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshape < 32) {
            char buf[128];
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            char *cz = strstr(buf, ",c");
            int causal = cz && cz[2] == 0;
            if (causal)
                *cz = 0;
            if (!parse_shape(buf, &shapes[nshape], err, sizeof err)) {
                fprintf(stderr, "ab: %s\n", err);
                return 2;
            }
            shapes[nshape].dtype = ATTN_BF16;
            shapes[nshape++].causal = causal;
        } else if (nvar < 16) {
            char path[512];
            snprintf(path, sizeof path, "%s", argv[i]);
            char *colon = strstr(path, ".so:det");
            if (colon && colon[7] == 0) {
                colon[3] = 0;
                vdet[nvar] = 1;
            }
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            const attn_step *s = h ? dlsym(h, "attn_step_info") : NULL;
            if (!s) {
                fprintf(stderr, "ab: cannot load %s: %s\n", argv[i], dlerror());
                return 2;
            }
            *(void **)&vdump[nvar] = dlsym(h, "attn_trace_dump");
            vname[nvar] = argv[i];
            var[nvar++] = s;
        }
    }
    if (!nshape || !nvar)
        return fprintf(stderr, "usage: ab [--backward] [--rounds R] [--reps N] [--normal] --shape S ... A.so ...\n"), 2;
    gpu_timer t;
    cudaStream_t stream;
    if (!cuda_ok(cudaStreamCreate(&stream), "stream") || !timer_init(&t, stream))
        return 1;
    printf("variant,pass,shape,causal,round,ms_median,ms_min,tflops,gbps\n");
    for (int si = 0; si < nshape; si++) {
        const attn_problem *p = &shapes[si];
        attn_problem pdet = *p;
        pdet.deterministic = 1;
        host_inputs in;
        if (!(normal ? inputs_make(&in, p, INPUT_NORMAL, 1234 + si) : inputs_make_fast(&in, p, 1234 + si)))
            return 1;
        size_t ws = 0;
        for (int v = 0; v < nvar; v++) {
            const char *why;
            const attn_problem *pv = vdet[v] ? &pdet : p;
            if (var[v]->supports(pv, bwd, &why) != ATTN_OK) {
                fprintf(stderr, "ab: %s does not take shape %d: %s\n", vname[v], si, why);
                return 2;
            }
            size_t w = var[v]->workspace_bytes(pv, bwd), w0 = var[v]->workspace_bytes(pv, 0);
            ws = w > ws ? w : ws;
            ws = w0 > ws ? w0 : ws;
        }
        ctx_t c = {.p = p, .bwd = bwd};
        const size_t nq = in.n_q * 2, nkv = in.n_kv * 2;
        int ok = dev_alloc(&c.q, nq, "q") && dev_alloc(&c.k, nkv, "k") && dev_alloc(&c.v, nkv, "v") &&
                 dev_alloc(&c.o, nq, "o") && dev_alloc(&c.lse, in.n_lse * 4, "lse") &&
                 dev_alloc(&c.d_o, nq, "do") && dev_alloc(&c.dq, nq, "dq") &&
                 dev_alloc(&c.dk, nkv, "dk") && dev_alloc(&c.dv, nkv, "dv") &&
                 dev_alloc(&c.ws, ws, "ws") && dev_upload(c.q, in.q, in.n_q, ATTN_BF16) &&
                 dev_upload(c.k, in.k, in.n_kv, ATTN_BF16) && dev_upload(c.v, in.v, in.n_kv, ATTN_BF16) &&
                 dev_upload(c.d_o, in.d_o, in.n_q, ATTN_BF16);
        c.s = var[0];
        ok = ok && var[0]->forward(p, c.q, c.k, c.v, c.o, c.lse, c.ws, stream) == ATTN_OK &&
             cuda_ok(cudaStreamSynchronize(stream), "forward");
        for (int v = 0; v < nvar && ok; v++) {   /* warm-up */
            c.s = var[v];
            c.p = vdet[v] ? &pdet : p;
            ok = launch(&c, stream) == ATTN_OK && cuda_ok(cudaStreamSynchronize(stream), "warm-up");
        }
        char shape[64];
        fmt_shape(p, shape, sizeof shape);
        /* rounds x reps launches per variant, the variants taking turns launch by launch, so
         * that the GPU's clock drifting under sustained load moves them alike */
        for (int r = 0; r < rounds && ok; r++) {
            timing tm[16];
            double *ms = malloc((size_t)nvar * reps * sizeof(double));
            for (int i = 0; i < reps && ok; i++)
                for (int v = 0; v < nvar && ok; v++) {
                    c.s = var[v];
                    c.p = vdet[v] ? &pdet : p;
                    ok = timer_run(&t, launch, &c, 1, &tm[v]) == ATTN_OK;
                    ms[v * reps + i] = tm[v].median_ms;
                }
            for (int v = 0; v < nvar && ok; v++) {
                double *x = ms + v * reps, lo = x[0];
                for (int i = 1; i < reps; i++)   /* insertion sort: reps is small */
                    for (int j = i; j > 0 && x[j] < x[j - 1]; j--) {
                        double y = x[j];
                        x[j] = x[j - 1];
                        x[j - 1] = y;
                    }
                lo = x[0];
                const double med = reps % 2 ? x[reps / 2] : 0.5 * (x[reps / 2 - 1] + x[reps / 2]);
                printf("%s,%s,\"%s\",%d,%d,%.4f,%.4f,%.1f,%.1f\n", vname[v], bwd ? "bwd" : "fwd",
                       shape, p->causal, r, med, lo, attn_flops(p, bwd) / (med * 1e9),
                       attn_kv_bytes(p) / (med * 1e6));
            }
            free(ms);
            fflush(stdout);
        }
        const char *tdir = getenv("AB_TRACE_DIR");
        for (int v = 0; v < nvar && ok && tdir; v++) {
            if (!vdump[v])
                continue;
            char tp[640];
            const char *base = strrchr(vname[v], '/');
            snprintf(tp, sizeof tp, "%s/%s_%d.csv", tdir, base ? base + 1 : vname[v], si);
            c.s = var[v];
            c.p = vdet[v] ? &pdet : p;
            ok = launch(&c, stream) == ATTN_OK && cuda_ok(cudaStreamSynchronize(stream), "trace") &&
                 vdump[v](tp) == 0;
        }
        void *b[] = {c.q, c.k, c.v, c.o, c.lse, c.d_o, c.dq, c.dk, c.dv, c.ws};
        for (int i = 0; i < 10; i++)
            cudaFree(b[i]);
        inputs_free(&in);
        if (!ok)
            return 1;
    }
    timer_free(&t);
    return 0;
}
