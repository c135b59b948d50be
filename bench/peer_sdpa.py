#!/usr/bin/env python3
"""The peers: PyTorch SDPA with each backend forced, and FlashAttention-4, timed like our C benchmark.

    python3 bench/peer_sdpa.py --sweep standard|single_head|decode --out FILE.csv
                               [--backends flash,cudnn,efficient,math,fa4] [--quick]
                               [--steps 12,13] [--rounds R] [--inputs randn|uniform] [--eager]
                               [--lockstep] [--flush write|read]

fa4 is FlashAttention-4 (PyPI flash-attn-4, its CuTe-DSL sm90 kernels on Hopper; 4.0.0b36 with
nvidia-cutlass-dsl 4.8.1 measured here), rows named `fa4`; it is optional: where the package is
not installed the sweep says so in one line and runs the others (`pip install flash-attn-4`; on a
machine with no package index, download its wheels elsewhere and install them there). It takes
[B, N, H, D] tensors, so its inputs are made in that layout.

Grouped-query attention (a shape's sixth field, H_kv < H): K and V have H_kv heads; SDPA is
called with enable_gqa=True (a backend that cannot says so and the row is unsupported), and
FlashAttention-4 takes K and V with fewer heads natively. The CSV's last two columns are heads_kv
and gbps: the bytes of K and V (2 * B * H_kv * Nk * D * the dtype's size) over the median time,
in GB/s, as `attn bench` writes them (the decode sweep is read in those).

The sweeps come from bench/sweeps.txt, the file `attn bench` reads too (its header says the
format), so the peers run exactly the steps' shapes, in the same order. Writes the same CSV
schema, so that plots/draw.sh can draw the steps and the peers side by side. Needs torch with
CUDA; without it, it says so in one line and exits 0 (the peers are optional).

Timing: a warm-up call (output checked finite), then the call captured in a CUDA graph, so that
what is timed is the GPU's work alone, as for our steps (a C call that launches kernels): an
eager call also times Python's and, for the backward, autograd's launch overhead, which at
N <= 1024 is most of the time. A call that cannot be captured is timed eagerly, and the log says
so; an eager call is preceded on the stream by torch.cuda._sleep (a GPU spin of ~1 ms) queued
before the start event, so that Python's launch overhead (FlashAttention-4's dispatch takes
tens of us) runs while the GPU is still busy and never lands between the two events. A replay
timed to pick the number of repetitions (~0.3 s in all, 3..30), then for each repetition: flush
L2 (zero a buffer of twice its size), time just the replay with a pair of CUDA events. Median, min and max in ms; the output is checked finite again afterwards. TF32
stays at torch's default (off).

--steps adds steps of this series as backends, called through the Python door
(python/flash_steps.py: the step's own forward or backward on preallocated outputs and
workspace) and timed exactly as the peers are, rows named by the step's folder. With --rounds R
the whole plan runs R times, shape by shape with every backend back to back, their order rotated
each round, and each row ends in a column `round`: the ratio of a step to a peer is then taken
between calls seconds apart, not between two sweeps minutes apart, which the GPU's clock drifts
between (the bars' method: bench/experiments/tools/interleaved.py reads such a file).

Inputs: --inputs randn (the default) draws Q, K, dO from torch.randn and V from torch.randn + 0.5,
for every backend; --inputs uniform draws them as `attn bench` does (common/tensor.c,
inputs_make_fast: uniform with variance 1, means 0.1, -0.05, 0.5 and 0.25 for Q, K, V and dO), so
that a step timed here and by `attn bench` sees the same kind of data. --eager times every call
eagerly behind the GPU spin, as an uncapturable call is, instead of as a graph replay.
--lockstep goes one step further than --rounds: a shape's backends are each warmed up and
captured, then timed in turn, one launch each, their order rotated every repetition (L2 flushed
before each), so that no drift of the GPU's clock falls between them (ab.c's way with builds).
--flush read evicts L2 by reading the buffer instead of zeroing it, so that the timed call does not
also write the flush's dirty lines back to memory (bench/experiments/15_flush; zeroing stays the
default, the method of every committed result).
"""
import argparse
import ctypes
import math
import os
import re
import statistics
import sys
import time
import warnings

HEADER = ("gpu,step,pass,dtype,batch,heads,seq_q,seq_k,head_dim,causal,"
          "ms_median,ms_min,ms_max,tflops,workspace_bytes,status,heads_kv,gbps")
BACKENDS = ("flash", "cudnn", "efficient", "math", "fa4")
SLEEP_CYCLES = 2_000_000   # torch.cuda._sleep ahead of an eager call: ~1 ms at 1.98 GHz
TARGET_S, MIN_REPS, MAX_REPS = 0.3, 3, 30
# how torch's "... kernel not used because" warnings name each backend
BACKEND_WORDS = {"flash": r"^flash", "cudnn": r"cudnn", "efficient": r"^memory.efficient", "math": r"^math"}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# $ATTN_SWEEPS_FILE if set, as for `attn bench` (bench/sweeps.c)
SWEEPS_FILE = os.environ.get("ATTN_SWEEPS_FILE") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "sweeps.txt")


def read_sweeps(path=SWEEPS_FILE):
    """{sweep: [(pass, dtype, B, H, Nq, Nk, D, causal, H_kv, quick), ...]} in file order, a shape's
    fwd before its bwd: the same reading as bench/sweeps.c (H_kv = H when the shape has five
    fields)."""
    sweeps = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            where = f"{path}:{lineno}"
            if len(fields) != 6:
                raise SystemExit(f"peer_sdpa: {where}: expected 6 fields (sweep dtype shape causal passes quick)")
            name, dtype, shape, causal, passes, quick = fields
            dims = shape.split(",")
            if (dtype not in ("fp32", "bf16") or len(dims) not in (5, 6)
                    or not all(d.isdigit() and int(d) >= 1 for d in dims)
                    or causal not in ("0", "1") or passes not in ("fwd", "bwd", "fwd,bwd") or quick not in ("0", "1")):
                raise SystemExit(f"peer_sdpa: {where}: malformed line: {line.strip()}")
            b, h, nq, nk, d = (int(x) for x in dims[:5])
            hkv = int(dims[5]) if len(dims) == 6 else h
            if h % hkv:
                raise SystemExit(f"peer_sdpa: {where}: H = {h} is not a multiple of H_kv = {hkv}")
            rows = sweeps.setdefault(name, [])
            for pas in ("fwd", "bwd"):
                if pas in passes.split(","):
                    rows.append((pas, dtype, b, h, nq, nk, d, int(causal), hkv, quick == "1"))
    return sweeps


def configs(sweeps, sweep, quick):
    """(pass, dtype, B, H, Nq, Nk, D, causal, H_kv), in the C sweep's order (backend innermost)."""
    for *c, is_quick in sweeps[sweep]:
        if is_quick or not quick:
            yield tuple(c)


def flops(pas, b, h, nq, nk, d, causal, hkv=None):
    """4·B·H·D·(visible query-key pairs); causal is top-left: query i sees keys j <= i. (H_kv
    changes no FLOP: each query head still meets every key.)"""
    pairs = sum(min(i + 1, nk) for i in range(nq)) if causal else nq * nk
    f = 4.0 * b * h * d * pairs
    return 2.5 * f if pas == "bwd" else f


def kv_bytes(dt, b, nk, d, hkv):
    """Bytes of K and V: 2·B·H_kv·Nk·D·(2 in bf16, 4 in fp32), the decode sweep's measure."""
    return 2.0 * b * hkv * nk * d * (2 if dt == "bf16" else 4)


def fmt_s(s):
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Refused(Exception):
    """The forced backend will not run this problem (torch's reason in the message)."""


def main():
    sweeps = read_sweeps()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", choices=tuple(sweeps), required=True, help="a sweep of bench/sweeps.txt")
    ap.add_argument("--out", required=True, help="CSV file to write")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--quick", action="store_true", help="only the sweep's lines marked quick")
    ap.add_argument("--steps", default="", help="steps of this series too, e.g. 12,13 (through python/flash_steps.py)")
    ap.add_argument("--rounds", type=int, default=1, help="run the plan this many times, interleaved")
    ap.add_argument("--inputs", choices=("randn", "uniform"), default="randn",
                    help="randn (default), or uniform as attn bench draws them")
    ap.add_argument("--eager", action="store_true",
                    help="time every call eagerly behind a GPU spin, no CUDA graph")
    ap.add_argument("--lockstep", action="store_true",
                    help="a shape's backends timed in turn, launch by launch")
    ap.add_argument("--flush", choices=("write", "read"), default="write",
                    help="flush L2 by zeroing a buffer twice its size (default), or by reading one")
    args = ap.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in BACKENDS:
            ap.error(f"unknown backend {b!r} (choose from {','.join(BACKENDS)})")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.functional import scaled_dot_product_attention as sdpa
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as e:  # ImportError, no driver, no GPU: the peers are optional
        log(f"peer_sdpa: torch with CUDA is not available here ({type(e).__name__}: {e}); "
            "skipping the SDPA peers")
        return 0

    fa4 = None
    if "fa4" in backends:
        try:
            from flash_attn.cute.interface import flash_attn_func as fa4
        except Exception as e:  # not installed (the usual case): the other peers still run
            log(f"peer_sdpa: FlashAttention-4 is not installed here ({type(e).__name__}: {e}); "
                "skipping the fa4 rows (pip install flash-attn-4)")
            backends.remove("fa4")

    steps = {}   # backend name "step:NN_name" -> flash_steps.Step
    if args.steps:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
        import flash_steps
        for spec in args.steps.split(","):
            try:
                s = flash_steps.load(spec.strip())
            except (FileNotFoundError, ValueError, OSError) as e:
                ap.error(f"--steps {spec}: {e}")
            steps["step:" + s.name] = s
            backends.append("step:" + s.name)

    forced = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
              "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    dtypes = {"bf16": torch.bfloat16, "fp32": torch.float32}
    means = {"q": 0.1, "k": -0.05, "v": 0.5, "do": 0.25}   # attn bench's (inputs_make_fast)

    def make_input(which, *shape, dt="bf16", like=None):
        """One input tensor: randn (V: + 0.5), or uniform with variance 1 and attn bench's mean."""
        if like is not None:
            shape, dt = like.shape, {v: k for k, v in dtypes.items()}[like.dtype]
        if args.inputs == "uniform":
            x = (torch.rand(*shape, device="cuda", dtype=torch.float32) * 2 - 1) * math.sqrt(3.0)
            return (x + means[which]).to(dtypes[dt])
        x = torch.randn(*shape, device="cuda", dtype=dtypes[dt])
        return x + 0.5 if which == "v" else x
    gpu = torch.cuda.get_device_name().replace(",", " ")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (256 << 20)
    flush_buf = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    flush_max = torch.empty((), dtype=torch.uint8, device="cuda")

    def finite(*ts):
        return all(bool(torch.isfinite(t).all()) for t in ts)

    def graphed(call, stream):
        """call() as a CUDA-graph replay on `stream`, or call itself, said in the log, when it
        cannot be captured. The replay must write its outputs: they are set to NaN first."""
        try:
            call()   # torch asks for a warm-up on the capturing stream before the capture
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                out = call()
            for t in out:
                t.fill_(float("nan"))
            g.replay()
            stream.synchronize()
            if not finite(*out):
                raise RuntimeError("the replay left its outputs unwritten")
            graphs.append(g)   # keep the graph (and its memory pool) alive for the timing

            def replay():
                g.replay()
                return out
            return replay
        except Exception as e:  # not capturable: time the eager call behind a GPU spin
            torch.cuda.synchronize()
            log(f"peer_sdpa: eager timing behind torch.cuda._sleep (CUDA graph capture failed: "
                f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]})")
            eager.append(True)
            return call

    graphs = []
    eager = []   # non-empty while the current call is timed eagerly

    def fa4_run_on(side, grad, dt, b, h, nq, nk, d, causal, hkv):
        """FlashAttention-4's call: [B, N, H, D] tensors, K and V with H_kv heads (its native
        grouped-query attention); a refusal (its asserts and ValueErrors, e.g. an unsupported
        dtype or head dim) raises Refused."""
        q = make_input("q", b, nq, h, d, dt=dt).requires_grad_(grad)
        k = make_input("k", b, nk, hkv, d, dt=dt).requires_grad_(grad)
        v = make_input("v", b, nk, hkv, d, dt=dt).requires_grad_(grad)

        def fwd():
            r = fa4(q, k, v, causal=bool(causal))
            return r[0] if isinstance(r, tuple) else r
        try:
            out = fwd()
        except torch.cuda.OutOfMemoryError:
            raise
        except (AssertionError, ValueError, NotImplementedError, TypeError) as e:
            raise Refused((str(e).strip().splitlines() or [type(e).__name__])[0]) from None
        if grad:
            d_o = make_input("do", like=out)
            call = lambda: torch.autograd.grad(out, (q, k, v), d_o, retain_graph=True)
        else:
            call = lambda: (fwd(),)
        return time_call(call, side)

    def step_run_on(side, s, grad, dt, b, h, nq, nk, d, causal, hkv):
        """A step of this series through the Python door: its forward, or (after one forward for
        O and lse) its backward, on outputs and workspace allocated once, so that the call only
        launches and a CUDA graph can capture it. Returns (times, workspace bytes)."""
        import flash_steps
        q = make_input("q", b, h, nq, d, dt=dt)
        k = make_input("k", b, hkv, nk, d, dt=dt)
        v = make_input("v", b, hkv, nk, d, dt=dt)
        p = flash_steps._problem(q, k, causal, None)
        st, why = s.supports(p, grad)
        if st != flash_steps.ATTN_OK:
            raise Refused(why or "refused")
        o, lse = flash_steps._forward(s, p, q, k, v)
        ws = flash_steps._workspace(s, p, grad, q.device)
        ptr = lambda: torch.cuda.current_stream().cuda_stream
        if grad:
            do = make_input("do", like=o)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

            def call():
                flash_steps._check(s._backward(ctypes.byref(p), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                               o.data_ptr(), lse.data_ptr(), do.data_ptr(), dq.data_ptr(),
                                               dk.data_ptr(), dv.data_ptr(), ws.data_ptr(), ptr()),
                                   s, "backward", p)
                return dq, dk, dv
        else:
            def call():
                flash_steps._check(s._forward(ctypes.byref(p), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                              o.data_ptr(), lse.data_ptr(), ws.data_ptr(), ptr()),
                                   s, "forward", p)
                return o, lse
        return time_call(call, side), s.workspace_bytes(p, grad)

    class Timer:
        """One backend's call on its stream: once() flushes L2 there (unless told not to), queues
        the GPU spin ahead of an eager call, and times the call between two events."""

        def __init__(self, call, side, is_eager):
            self.call, self.side, self.is_eager, self.res = call, side, is_eager, None
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

        def once(self, flush=True):
            with torch.cuda.stream(self.side):
                if flush and args.flush == "write":
                    flush_buf.zero_()
                elif flush:   # the same eviction, but L2 left holding clean lines
                    torch.amax(flush_buf, dim=0, out=flush_max)
                if self.is_eager:
                    torch.cuda._sleep(SLEEP_CYCLES)
                self.start.record(); self.res = self.call(); self.end.record(); self.end.synchronize()
            return self.start.elapsed_time(self.end)

        def check(self):
            if not finite(*self.res):
                raise FloatingPointError("timed output has NaN/Inf")

    def time_call(call, side):
        """The warm-up, the repetitions' count and the timed repetitions of call on side; with
        --lockstep, the warm-up only, and the Timer that the caller runs in turn with the others'."""
        res = call()  # warm-up (FlashAttention-4 compiles its kernel here, once per config)
        if not finite(*res):
            raise FloatingPointError("warm-up output has NaN/Inf")
        eager.clear()
        first = call
        if args.eager:   # every call eagerly, behind the spin (to compare with the graph's time)
            eager.append(True)
        else:
            call = graphed(call, side)
        timer = Timer(call, side, bool(eager))
        # A graph replay reads the inputs by address but does not hold them; the first call's
        # closure does. Timed later (--lockstep), after the caller's frame is gone, they would
        # be freed and their memory handed to the next backend's tensors.
        timer.inputs = first
        if args.lockstep:
            return timer
        reps = repetitions(timer.once(flush=False))  # estimate the time per call
        times = [timer.once() for _ in range(reps)]
        timer.check()
        return times

    def repetitions(ms):
        return min(MAX_REPS, max(MIN_REPS, math.ceil(TARGET_S * 1e3 / max(ms, 1e-3))))

    def run_one(backend, pas, dt, b, h, nq, nk, d, causal, hkv):
        """Returns (the timed milliseconds, the workspace bytes); raises Refused, OOM or else."""
        torch.manual_seed(0)
        grad = pas == "bwd"
        # Everything on one side stream: the graph is captured there, and autograd runs a
        # backward on the stream of its forward, so the forward runs there too.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            if backend == "fa4":
                return fa4_run_on(side, grad, dt, b, h, nq, nk, d, causal, hkv), 0
            if backend in steps:
                return step_run_on(side, steps[backend], grad, dt, b, h, nq, nk, d, causal, hkv)
            return run_on(side, backend, grad, dt, b, h, nq, nk, d, causal, hkv), 0

    def run_on(side, backend, grad, dt, b, h, nq, nk, d, causal, hkv):
        q = make_input("q", b, h, nq, d, dt=dt).requires_grad_(grad)
        k = make_input("k", b, hkv, nk, d, dt=dt).requires_grad_(grad)
        v = make_input("v", b, hkv, nk, d, dt=dt).requires_grad_(grad)
        # grouped-query attention: SDPA broadcasts K and V over the groups itself (enable_gqa);
        # only asked for where H_kv < H, so the multi-head calls are the ones measured before
        gqa = {"enable_gqa": True} if hkv != h else {}
        with sdpa_kernel(forced[backend]), warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                out = sdpa(q, k, v, is_causal=bool(causal), **gqa)
            except torch.cuda.OutOfMemoryError:
                raise
            except RuntimeError as e:
                # A refusal is "No available kernel", after warnings that say why: "Flash
                # attention kernel not used because:", then the reason, e.g. "Expected query,
                # key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: float".
                msg = (str(e).strip().splitlines() or [""])[0]
                if "No available kernel" not in msg and not any("not used" in str(w.message) for w in warned):
                    raise
                why = [re.sub(r"\s*\(Triggered internally at [^)]*\)", "", str(w.message)).strip() for w in warned]
                why = [w.splitlines()[0] for w in why if w]
                # torch warns about every backend it considered; keep the forced one's reason
                mine = [w for w in why if re.search(BACKEND_WORDS[backend], w, re.I)]
                raise Refused(" ".join((mine or why)[:4]) or msg) from None
            if grad:
                d_o = make_input("do", like=out)
                call = lambda: torch.autograd.grad(out, (q, k, v), d_o, retain_graph=True)
            else:
                call = lambda: (sdpa(q, k, v, is_causal=bool(causal), **gqa),)
            return time_call(call, side)

    # Round r runs each shape's backends back to back, their order rotated by r.
    plan = [(r, be, c) for r in range(args.rounds) for c in configs(sweeps, args.sweep, args.quick)
            for be in backends[r % len(backends):] + backends[:r % len(backends)]]
    # Progress counts work in FLOPs (as the C sweep does), so big shapes weigh in the estimate.
    total_work, done_work = sum(flops(c[0], *c[2:]) for _, _, c in plan), 0.0
    t0 = time.time()

    def attempt(fn):
        """(value, status, result) of fn(), a failure as its row says it (never crash the sweep)."""
        try:
            return fn(), "ok", ""
        except Refused as e:
            return None, "unsupported", f"unsupported: {e}"
        except torch.cuda.OutOfMemoryError:
            return None, "oom", "out of memory"
        except Exception as e:  # the row says error
            first = (str(e).strip().splitlines() or [""])[0]
            return None, "error", f"error: {type(e).__name__}: {first}"

    def emit(f, i, rnd, be, cfg, times, ws, status, result):
        """One CSV row and one progress line."""
        nonlocal done_work
        pas, dt, b, h, nq, nk, d, causal, hkv = cfg
        step = "fa4" if be == "fa4" else be[5:] if be in steps else f"sdpa_{be}"
        shape = f"D={d} N={nq}" if nq == nk else f"D={d} Nq={nq} Nk={nk}"
        if hkv != h or b != 4 or h != 8:
            shape = f"B={b} H={h} H_kv={hkv} " + shape
        what = f"{step} {pas} {dt} {shape} causal={causal}"
        if args.rounds > 1:
            what += f" (round {rnd + 1})"
        cols, gbps = ",,,", ""
        if status == "ok":
            med = statistics.median(times)
            tf = flops(pas, b, h, nq, nk, d, causal) / (med * 1e-3) / 1e12
            gbps = f"{kv_bytes(dt, b, nk, d, hkv) / (med * 1e-3) / 1e9:.1f}"
            cols = f"{med:.4f},{min(times):.4f},{max(times):.4f},{tf:.2f}"
            result = f"{med:.3f} ms  {tf:.1f} TFLOP/s  {gbps} GB/s"
        print(f"{gpu},{step},{pas},{dt},{b},{h},{nq},{nk},{d},{causal},{cols},{ws},{status},{hkv},{gbps}"
              + (f",{rnd + 1}" if args.rounds > 1 else ""), file=f, flush=True)
        done_work += flops(pas, b, h, nq, nk, d, causal)
        elapsed = time.time() - t0
        left = elapsed / done_work * (total_work - done_work)
        log(f"[{i:3d}/{len(plan):4d}] {what}: {result}  (elapsed {fmt_s(elapsed)}, ~{fmt_s(left)} left)")

    with open(args.out, "w") as f:
        print(HEADER + (",round" if args.rounds > 1 else ""), file=f, flush=True)
        if not args.lockstep:
            for i, (rnd, be, cfg) in enumerate(plan, 1):
                out, status, result = attempt(lambda: run_one(be, *cfg))
                times, ws = out if out else (None, 0)
                graphs.clear()
                if status == "oom":
                    torch.cuda.empty_cache()
                emit(f, i, rnd, be, cfg, times, ws, status, result)
            return 0
        # --lockstep: a shape's backends, each warmed up and captured, then timed in turn launch
        # by launch (the order rotated every repetition), as ab.c times builds of one step.
        i = 0
        for start in range(0, len(plan), len(backends)):
            group = plan[start:start + len(backends)]
            rnd, cfg = group[0][0], group[0][2]
            ready, rows = [], []
            for _, be, _ in group:
                out, status, result = attempt(lambda: run_one(be, *cfg))
                if status == "oom":
                    torch.cuda.empty_cache()
                rows.append([be, [], out[1] if out else 0, status, result])
                if out:
                    ready.append((rows[-1], out[0]))
            def timed(row, t, flush=True):   # a failure ends the row's timing, and says why
                ms, row[3], row[4] = attempt(lambda: t.once(flush))
                return ms or 0.0
            if ready:   # the slowest call sets the count, as time_call's estimate does
                reps = repetitions(max(timed(row, t, False) for row, t in ready))
                for r in range(reps):
                    for row, t in ready[r % len(ready):] + ready[:r % len(ready)]:
                        if row[3] == "ok":
                            row[1].append(timed(row, t))
                for row, t in ready:
                    if row[3] == "ok":
                        _, row[3], row[4] = attempt(t.check)
            graphs.clear()
            for be, times, ws, status, result in rows:
                i += 1
                emit(f, i, rnd, be, cfg, times, ws, status, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
