#!/usr/bin/env bash
# Run 2026-12-01 (this folder's ab.csv, checks.txt, repeat.txt, sanitize.txt). V_DET2=1 is now
# step 13, so var.patch applies to step 13 as it was at 619fbaf (git show 619fbaf:steps/...). Step 13's deterministic backward is 1.7-2.3x the
# default's time (note 13, "Determinism"): the wait for each dQ add to complete sits on the
# warpgroup's path every tile, and every key tile of a query tile waits for the one before, all
# of them starting at query tile 0 together. var.patch (-DV_DET2, 0 = step 13's PTX) takes both
# off, as FlashAttention-3 does: a dQ writer warp adds while the warpgroups go on, and the key
# tiles reach a query tile one after another (README.md says how, and why it cannot deadlock).
#   v13_det2.so    V_DET2=1: groups of G = min(n_kt, n_qt, SMs) key tiles of a head
#   v13_det2w.so   V_DET2=2: the groups also cut at each wave of SMs blocks (FA3's get_kv_status)
# Here (nvcc, no GPU):  bench/experiments/13_deterministic/run.sh build
#   the patched file, tools/ptx_same.sh on it with V_DET2=0, both builds (warnings are errors),
#   ptxas's registers and spills of every bwd_main in build/ab/v13_det2_ptxas.txt and, where
#   cuobjdump is on PATH (pip's nvidia-cuda-cuobjdump), the default kernels' SASS compared with
#   V_DET2=0's; build/ab/ab and build/ab/rep (three deterministic backwards compared bit by bit)
# On the H200, one call, carry ["build/attn", "build/ab", "build/steps", "build/tests"]:
#   bash bench/experiments/13_deterministic/run.sh run $OUT
# The README's prediction (no GPU): bench/experiments/13_deterministic/run.sh model
# Everything runs under timeout (a wrong turn order hangs a kernel, not the call); OUT receives:
#   checks.txt    attn run --deterministic --backward (checked against step 00 or the fp64 CPU
#                 reference), each build, nine ragged and large shapes
#   sanitize.txt  compute-sanitizer racecheck and synccheck, v13_det2, two small shapes (beside
#                 repeat.txt's runs)
#   repeat.txt    the GPU test gpu/deterministic_backward_is_repeatable on each build (four runs,
#                 two streams, two small shapes), then rep: three runs at eight larger shapes
#   ab.csv        launch by launch (../tools/ab.c), alone on the GPU, the eight bar shapes, 3 rounds
#                 of 10: step 13, step 13 deterministic, both builds deterministic; ab_ratio.txt,
#                 each one's median over the default's (the bar: <= 1.15 at D = 128, N = 16384)
#   log.txt       progress, each part's exit status
set -u
cd "$(dirname "$0")/../../.."
X=bench/experiments/13_deterministic
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
# step 13's flags (make step-flags STEP=13)
NV="$NVCC -O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC,-Wall,-Wextra,-Werror -Werror all-warnings
    -cudart shared -Xlinker -rpath=/usr/local/cuda/lib64 -Icommon -gencode arch=compute_90a,code=sm_90a"
BUILDS="det2:1 det2w:2"   # name:V_DET2
# the eight bar shapes (ab.c: ",c" is causal)
sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
case ${1:-} in
build)
    set -e -o pipefail
    make -s build/attn build/libharness.a build/tests/gpu build/steps/00_materialized.so \
        build/steps/13_backward_wgmma.so
    mkdir -p build/ab build/v13det
    patch -s -o build/v13det/det2.cu steps/13_backward_wgmma/attention.cu $X/var.patch
    tools/ptx_same.sh steps/13_backward_wgmma/attention.cu build/v13det/det2.cu   # V_DET2=0
    : >build/ab/v13_det2_ptxas.txt
    for b in base:0 $BUILDS; do
        out=build/ab/v13_${b%:*}.so
        [ ${b#*:} = 0 ] && out=build/v13det/v0.so   # step 13 itself, for the comparisons
        echo "== ${b%:*} (V_DET2=${b#*:})" >>build/ab/v13_det2_ptxas.txt
        $NV -Xptxas -v -DV_DET2=${b#*:} -o $out build/v13det/det2.cu 2>&1 |
            grep -A3 "entry function '_Z8bwd_main" | grep -E "Compiling|spill|Used" | paste - - - |
            sed -E 's/.*_Z8bwd_mainILi([0-9]+)ELb([01])ELb([01])E[^ ]* for .sm_90a.[[:space:]]*/bwd_main<D=\1, MASKED=\2, DET=\3>: /; s/ptxas info *: //; s/, used 16 barriers//; s/[[:space:]]+/ /g' \
                >>build/ab/v13_det2_ptxas.txt
    done
    cat build/ab/v13_det2_ptxas.txt
    # the default kernels (DET = 0) and the others: the same SASS with V_DET2 = 1 as with 0? (the
    # only change there is sms, an unused last parameter)
    co=${CUOBJDUMP:-$(command -v cuobjdump || true)}
    if [ -n "$co" ]; then
        for v in v0:build/v13det/v0.so det2:build/ab/v13_det2.so; do   # addresses and encodings out
            "$co" -sass ${v#*:} | sed -E 's@/\*[0-9a-f]{4}\*/@@; s@/\* 0x[0-9a-f]+ \*/@@' |
                awk '/Function :/ { f = $3; sub(/EEv.*/, "", f); print "##", f; next } { print }' \
                >build/v13det/${v%%:*}.sass
        done
        for f in $(grep '^##' build/v13det/v0.sass | cut -c4- | grep -v 'ELb1ELb1$'); do
            for v in v0 det2; do awk -v f="$f" '/^##/ { on = $2 == f; next } on' build/v13det/$v.sass >build/v13det/$v.one; done
            cmp -s build/v13det/v0.one build/v13det/det2.one && echo "SASS identical, V_DET2=0 and 1: $f" ||
                echo "SASS DIFFERS, V_DET2=0 and 1: $f"
        done
        rm -f build/v13det/*.sass build/v13det/*.one
    else
        echo "(no cuobjdump on PATH: the default kernels' SASS not compared)"
    fi
    gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icommon -I/usr/local/cuda/include -o build/ab/ab \
        bench/experiments/tools/ab.c build/libharness.a -L/usr/local/cuda/lib64 \
        -Wl,-rpath,/usr/local/cuda/lib64 -lcudart -ldl -lm
    # rep: a step's deterministic backward run three times on each shape, dQ, dK and dV compared
    # byte for byte (the GPU test does that on two small shapes; these reach several waves of
    # blocks, groups cut by waves and the short last group)
    cat >build/v13det/rep.c <<'EOF'
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "harness.h"
int main(int argc, char **argv)
{
    if (argc < 3)
        return fprintf(stderr, "usage: rep STEP.so B,H,Nq,Nk,D[,c] ...\n"), 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    const attn_step *s = h ? dlsym(h, "attn_step_info") : NULL;
    if (!s)
        return fprintf(stderr, "rep: cannot load %s: %s\n", argv[1], dlerror()), 2;
    int bad = 0;
    for (int a = 2; a < argc; a++) {
        char buf[128], err[256], shape[64];
        snprintf(buf, sizeof buf, "%s", argv[a]);
        char *cz = strstr(buf, ",c");
        const int causal = cz && cz[2] == 0;
        if (causal)
            *cz = 0;
        attn_problem p;
        if (!parse_shape(buf, &p, err, sizeof err))
            return fprintf(stderr, "rep: %s\n", err), 2;
        p.dtype = ATTN_BF16, p.causal = causal, p.deterministic = 1;
        const char *why;
        if (s->supports(&p, 1, &why) != ATTN_OK)
            return fprintf(stderr, "rep: %s refuses %s: %s\n", s->name, argv[a], why), 2;
        host_inputs in;
        if (!inputs_make_fast(&in, &p, 4321 + a))
            return 2;
        const size_t nq = in.n_q * 2, nkv = in.n_kv * 2, wf = s->workspace_bytes(&p, 0),
                     wb = s->workspace_bytes(&p, 1), ws_bytes = wf > wb ? wf : wb;
        void *q, *k, *v, *o, *lse, *d_o, *dq, *dk, *dv, *ws;
        if (!(dev_alloc(&q, nq, "q") && dev_alloc(&k, nkv, "k") && dev_alloc(&v, nkv, "v") &&
              dev_alloc(&o, nq, "o") && dev_alloc(&lse, in.n_lse * 4, "lse") &&
              dev_alloc(&d_o, nq, "d_o") && dev_alloc(&dq, nq, "dq") && dev_alloc(&dk, nkv, "dk") &&
              dev_alloc(&dv, nkv, "dv") && dev_alloc(&ws, ws_bytes, "ws") &&
              dev_upload(q, in.q, in.n_q, p.dtype) && dev_upload(k, in.k, in.n_kv, p.dtype) &&
              dev_upload(v, in.v, in.n_kv, p.dtype) && dev_upload(d_o, in.d_o, in.n_q, p.dtype) &&
              s->forward(&p, q, k, v, o, (float *)lse, ws, 0) == ATTN_OK))
            return fprintf(stderr, "rep: setup failed at %s\n", argv[a]), 2;
        void *out[3] = {dq, dk, dv};
        const size_t bytes[3] = {nq, nkv, nkv};
        unsigned char *first[3], *now[3];
        size_t differ[3] = {0, 0, 0};
        for (int t = 0; t < 3; t++)
            if (!(first[t] = malloc(bytes[t])) || !(now[t] = malloc(bytes[t])))
                return 2;
        for (int run = 0; run < 3; run++) {
            for (int t = 0; t < 3; t++)   /* poisoned, so a run that skips a write shows */
                cudaMemset(out[t], 0xff, bytes[t]);
            cudaMemset(ws, 0xff, ws_bytes);
            if (s->backward(&p, q, k, v, o, (const float *)lse, d_o, dq, dk, dv, ws, 0) != ATTN_OK ||
                !cuda_ok(cudaDeviceSynchronize(), "backward"))
                return fprintf(stderr, "rep: backward failed at %s\n", argv[a]), 2;
            for (int t = 0; t < 3; t++) {
                if (!cuda_ok(cudaMemcpy(run ? now[t] : first[t], out[t], bytes[t],
                                        cudaMemcpyDeviceToHost), "download"))
                    return 2;
                if (run)
                    for (size_t x = 0; x < bytes[t] / 2; x++)   /* bf16 elements */
                        differ[t] += memcmp(now[t] + 2 * x, first[t] + 2 * x, 2) != 0;
            }
        }
        fmt_shape(&p, shape, sizeof shape);
        printf("%s %s%s: %s (dQ %zu, dK %zu, dV %zu elements differ over 3 runs)\n", s->name, shape,
               causal ? " causal" : "", differ[0] + differ[1] + differ[2] ? "DIFFER" : "same bits",
               differ[0], differ[1], differ[2]);
        bad |= differ[0] + differ[1] + differ[2] != 0;
        void *b[] = {q, k, v, o, lse, d_o, dq, dk, dv, ws};
        for (int i = 0; i < 10; i++)
            cudaFree(b[i]);
        for (int t = 0; t < 3; t++)
            free(first[t]), free(now[t]);
        inputs_free(&in);
    }
    return bad;
}
EOF
    gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icommon -I/usr/local/cuda/include \
        -o build/ab/rep build/v13det/rep.c build/libharness.a -L/usr/local/cuda/lib64 \
        -Wl,-rpath,/usr/local/cuda/lib64 -lcudart -ldl -lm
    ls -l build/ab/v13_det2.so build/ab/v13_det2w.so build/ab/ab build/ab/rep
    ;;
run)
    for f in build/attn build/ab/ab build/ab/rep build/ab/v13_det2.so build/ab/v13_det2w.so build/tests/gpu \
             build/steps/13_backward_wgmma.so build/steps/00_materialized.so; do
        [ -e $f ] || { echo "$0: no $f (run.sh build, then carry build/attn, build/ab, build/steps, build/tests)" >&2; exit 2; }
    done
    o=$2; t0=$SECONDS; mkdir -p $o; log=$o/log.txt
    say() { echo "== $* at $((SECONDS - t0)) s" | tee -a $log; }
    left() { [ $((SECONDS - t0)) -lt $1 ] || { say "skipped for time: $2"; false; }; }
    { echo "commit $(cat .git-sha 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)"
      nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; } >>$log 2>&1
    # steps folders: the build as 13_backward_wgmma.so, beside step 00 (attn run's reference on
    # the GPU) in dir_*, alone in only_* (the GPU test runs every step of its folder)
    for b in $BUILDS; do
        n=${b%:*}; mkdir -p build/v13det/dir_$n build/v13det/only_$n
        cp build/ab/v13_$n.so build/v13det/dir_$n/13_backward_wgmma.so
        cp build/ab/v13_$n.so build/v13det/only_$n/13_backward_wgmma.so
        cp build/steps/00_materialized.so build/v13det/dir_$n/
    done
    # 1. checked runs: the seven shapes of det_runs.txt (../12_three_warpgroups), a query-short one
    #    (G = n_qt = 5 < n_kt = 40) and a causal one with Nq > Nk; both builds, shape by shape
    for s in "2,3,300,257,64 --causal" "1,4,1000,1000,128" "3,5,777,1313,128" \
             "2,7,2049,4095,64 --causal" "2,4,300,5000,128" "3,2,1500,700,64 --causal" \
             "4,8,4096,4096,64" "4,8,4096,4096,128 --causal" "4,8,16384,16384,128"; do
        for b in $BUILDS; do
            n=${b%:*}
            left 240 "attn run $n $s" || continue
            echo "## $n --shape $s"
            ATTN_STEPS_DIR=build/v13det/dir_$n timeout -k 5 90 build/attn run --step 13 --backward \
                --deterministic --shape $s --reps 3 2>&1 | grep -E "^(check|time|result|timed)|attn run|FAIL"
            echo "[exit status ${PIPESTATUS[0]}]"
        done
    done >$o/checks.txt 2>&1
    say "checks: $(grep -c '^\[exit status 0\]' $o/checks.txt) of $(grep -c '^##' $o/checks.txt) exit 0, $(grep -c 'exit status 124' $o/checks.txt) timed out"
    # 2. the sanitizers on v13_det2 (racecheck: shared-memory hazards between the warpgroups and
    #    the writer; synccheck: the named barriers), as 7_checks.sh ran them, in the background
    #    beside 3 (neither is timed)
    cs=${CUDA:-/usr/local/cuda}/bin/compute-sanitizer; [ -x "$cs" ] || cs=compute-sanitizer
    for t in racecheck synccheck; do
      ( for s in "2,3,300,257,64 --causal" "1,3,200,333,128"; do
          out=$(ATTN_STEPS_DIR=build/v13det/dir_det2 timeout -k 5 120 "$cs" --tool $t --error-exitcode 99 \
                build/attn run --step 13 --shape $s --backward --deterministic --reps 1 2>&1); rc=$?
          summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" <<<"$out" | tail -1)
          verdict=$(grep -E "^result|-> (PASS|FAIL)" <<<"$out" | tail -1)
          echo "v13_det2 $t --backward --deterministic $s: rc $rc; ${summary:-no summary}; ${verdict}"
          [ $rc -eq 0 ] || grep -E "Invalid|race|Race|hazard|barrier|Barrier" <<<"$out" | head -5
        done >$o/s_$t.txt 2>&1 ) &
    done
    # 3. repeatable? the GPU test (two small shapes, 4 runs, 2 streams), then rep (3 runs, larger)
    for b in $BUILDS; do
        n=${b%:*}
        left 330 "repeat $n" || continue
        echo "## $n: build/tests/gpu --filter gpu/deterministic_backward_is_repeatable"
        ATTN_STEPS_DIR=build/v13det/only_$n timeout -k 5 60 build/tests/gpu \
            --filter 'gpu/deterministic_backward_is_repeatable' --verbose 2>&1 |
            grep -E "deterministic|differ|FAIL|CRASH|Synthesis"
        echo "[exit status ${PIPESTATUS[0]}]"
        echo "## $n: rep"
        timeout -k 5 60 build/ab/rep build/ab/v13_$n.so 4,8,4096,4096,128 4,8,4096,4096,64 \
            4,8,16384,16384,128 4,8,16384,16384,64,c 4,8,4096,4096,128,c 3,5,777,1313,128 \
            2,4,300,5000,128 2,7,2049,4095,64,c 2>&1
        echo "[exit status $?]"
    done >$o/repeat.txt 2>&1
    say "repeat: $(grep -c 'same bits' $o/repeat.txt) shapes same bits, $(grep -c DIFFER $o/repeat.txt) differ; $(grep -c '^\[exit status 0\]' $o/repeat.txt) of $(grep -c '^##' $o/repeat.txt) parts exit 0"
    wait
    cat $o/s_racecheck.txt $o/s_synccheck.txt >$o/sanitize.txt; rm -f $o/s_*.txt
    say "sanitize: $(grep -c 'rc 0;' $o/sanitize.txt) clean of $(grep -c '^v13' $o/sanitize.txt)"
    # 4. launch by launch, the bar shapes, alone on the GPU (step 13's deterministic form: 1.7-2.3x)
    lim=$((585 - (SECONDS - t0))); [ $lim -le 200 ] || lim=200
    if left 500 "ab"; then
        timeout -k 5 $lim build/ab/ab --backward --rounds 3 --reps 10 $sh8 build/steps/13_backward_wgmma.so \
            build/steps/13_backward_wgmma.so:det build/ab/v13_det2.so:det build/ab/v13_det2w.so:det \
            >$o/ab.csv 2>>$log
        say "ab rc $? (limit $lim s)"
        # each variant's median over the rounds, over the default's (the first variant)
        awk -F, 'NR > 1 { k = $3 "," $4 "," $5 "," $6 "," $7 (($8) ? " causal" : "")   # the shape is quoted
                          if (!($1 in v)) { v[$1]; ord[++nv] = $1 }; key[k]; t[$1, k] = t[$1, k] " " $10 }
            function med(s,   a, n, i, j, x) { n = split(s, a, " "); for (i = 2; i <= n; i++)
                for (j = i; j > 1 && a[j] < a[j - 1]; j--) { x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
                return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
            END { for (k in key) { b = med(t[ord[1], k]); printf "%-28s default %8.4f ms", k, b
                    for (i = 2; i <= nv; i++) if (t[ord[i], k] != "")
                        printf "  %s %.3f", ord[i], med(t[ord[i], k]) / b
                    printf "\n" } }' $o/ab.csv | sort >$o/ab_ratio.txt
        cat $o/ab_ratio.txt | tee -a $log
    fi
    ;;
model)   # README's prediction and its deadlock checks: an event model of the orders (python3, ~30 s)
    python3 - <<'EOF'
# An event model of bwd_main's deterministic dQ orders (run.sh model). Unit: one tile of one block.
# Blocks start in index order on S SMs, one each. A block's warpgroups hand tile w's dQ over at
# ready[w] and compute the next tile meanwhile, but may hand it over only once the previous one is
# read (ready[w+1] = max(ready[w] + 1, add of w issued)); the writer issues the add of w once it is
# handed over, its own previous visit is complete, and the query tile's previous turn has passed;
# a visit is complete L after it is issued. Step 13's DET (mode 0): the warpgroup itself waits for
# the completion (ready[w+1] = done[w] + 1), turns in key order.
import heapq, random, sys

def hps_of(bh, n_kt, n_qt, c, S):   # bwd_heads_per_section
    tiles = sum(n_qt - min(kt * c, n_qt) for kt in range(n_kt))
    n = tiles * bh // (S * n_qt) - 1
    return (bh + n - 1) // n if n > 1 else bh

def blocks(mode, BH, n_kt, n_qt, S, causal, c):
    """(head, query tiles in walk order, turn of each) per block, in launch order"""
    out, hps = [], hps_of(BH, n_kt, n_qt, c, S) if causal else BH
    for b in range(BH * n_kt):
        if causal:
            per = hps * n_kt; sec, r = divmod(b, per); h = min(hps, BH - sec * hps)
            kt, bh = (n_kt - 1 - r // h if mode else r // h), sec * hps + r % h
            qs = list(range(min(kt * c, n_qt), n_qt))
            out.append((bh, qs, [min(n_kt - 1, q // c) - kt if mode else kt for q in qs]))
            continue
        bh, kt = divmod(b, n_kt)
        if mode == 0:
            out.append((bh, list(range(n_qt)), [kt] * n_qt)); continue
        if mode == 1:
            G = min(n_kt, n_qt, S); first = kt // G * G; size = min(G, n_kt - first)
        else:
            h0, w0 = b - kt, b // S * S
            lo, hi = max(w0, h0) - h0, min(w0 + S, h0 + n_kt) - h0
            first = lo + (kt - lo) // n_qt * n_qt; size = min(n_qt, hi - first)
        r = kt - first
        qs = [(r + i) % n_qt for i in range(n_qt)]
        out.append((bh, qs, [first + (min(q, size - 1) - r) % size for q in qs]))
    if mode:   # each query tile's turns: 0 .. visits - 1, once each
        seen = {}
        for bh, qs, turns in out:
            for q, t in zip(qs, turns): seen.setdefault((bh, q), []).append(t)
        assert all(sorted(v) == list(range(len(v))) for v in seen.values())
    return out

def simulate(B, S, L, mode):
    """the makespan, or None if it deadlocks"""
    passed, waiting, st, heap = {}, {}, {}, []
    fin, nxt, running = 0.0, 0, 0
    def push(b):
        x, (bh, qs, turns) = st[b], B[b]
        w = x['w']
        if w == len(qs):
            heapq.heappush(heap, (max(x['free'], x['ready']), b, 1)); return
        key = (bh, qs[w], turns[w])
        tr = 0.0 if turns[w] == 0 else passed.get(key)
        if tr is None: waiting[key] = b; return
        heapq.heappush(heap, (max(x['free'], x['ready'], tr), b, 0))
    def start(b, t):
        nonlocal running
        running += 1
        st[b] = {'w': 0, 'ready': t + 1 if B[b][1] else t, 'free': t}
        push(b)
    while nxt < len(B) and running < S: start(nxt, 0.0); nxt += 1
    while heap:
        t, b, done = heapq.heappop(heap)
        x, (bh, qs, turns) = st[b], B[b]
        if done:
            fin, running = max(fin, t), running - 1
            if nxt < len(B): start(nxt, t); nxt += 1
            continue
        w, end = x['w'], t + L
        key = (bh, qs[w], turns[w] + 1)
        passed[key] = end
        if key in waiting: push(waiting.pop(key))
        x['free'], x['w'] = end, w + 1
        if w + 1 < len(qs): x['ready'] = max(x['ready'] + 1, t) if mode else end + 1
        push(b)
    return None if running or nxt < len(B) else fin

def default(BH, n_kt, n_qt, S, causal, c, L):   # no turns: the blocks' lengths and the SMs alone
    h, fin = [0.0] * S, 0.0   # (a block ends when its last add completes, as step 13's do)
    for bh, qs, _ in blocks(0, BH, n_kt, n_qt, S, causal, c):
        t = heapq.heappop(h) + len(qs) + L; heapq.heappush(h, t); fin = max(fin, t)
    return fin

if __name__ == "__main__":
    S = 132
    print("the eight bar shapes (B*H = 32), time over the default's; L = a visit's add, in tiles")
    for N in (4096, 16384):
        for D in (64, 128):
            Br = 128 if D == 64 else 64
            for causal in (0, 1):
                n_kt, n_qt, c = N // 128, N // Br, 128 // Br
                row = []
                for L in (0.8, 1.6):
                    base = default(32, n_kt, n_qt, S, causal, c, L)
                    r = [simulate(blocks(m, 32, n_kt, n_qt, S, causal, c), S, L, m) / base
                         for m in ((0, 1) if causal else (0, 1, 2))]
                    row.append("L=%.1f: step 13 %.2f, V_DET2=1 %.3f%s" % (L, r[0], r[1], "" if causal else ", 2 %.3f" % r[2]))
                print("N=%-5d D=%-3d %-7s %s" % (N, D, "causal" if causal else "", " | ".join(row)))
                sys.stdout.flush()
    random.seed(1)
    for trial in range(400):
        S_, BH, n_kt, n_qt = random.choice([1, 2, 3, 5, 7, 13, 132]), random.randint(1, 6), random.randint(1, 40), random.randint(1, 40)
        L, c = random.choice([0.1, 0.5, 1.5, 3.0]), random.choice([1, 2])
        for m, causal in ((1, 0), (2, 0), (1, 1)):
            assert simulate(blocks(m, BH, n_kt, n_qt, S_, causal, c), S_, L, m) is not None, (m, causal, BH, n_kt, n_qt, S_)
    print("400 random problems (1-6 heads, 1-40 key and query tiles, 1-132 SMs): every query tile's",
          "turns 0 .. visits - 1 once each, no deadlock (V_DET2 = 1, 2, causal)")
    big = blocks(1, 2, 12, 12, 10**9, 0, 1)   # groups of 12 on 5 SMs: must deadlock
    print("groups larger than the SMs (12 key tiles a group, 5 SMs):",
          "deadlock, as expected" if simulate(big, 5, 0.5, 1) is None else "NO DEADLOCK: the model is wrong")
EOF
    ;;
*) echo "usage: $0 build | run OUT | model" >&2; exit 2 ;;
esac
