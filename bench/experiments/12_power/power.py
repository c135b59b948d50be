#!/usr/bin/env python3
"""12_power: is the forward's lockstep ratio set by the card's power limit?

    python3 bench/experiments/12_power/power.py OUT.csv [--before DIR] [--secs S] [--rounds R]

Each forward alone and sustained: its call captured in a CUDA graph and replayed back to back for
S seconds (no L2 flush, no host wait between replays but one every 20), while nvidia-smi samples
the SM clock, the board's power and the clock-event reasons every 20 ms. Per backend and shape:
the time a call (CUDA events around the whole run), the mean SM clock and power over the run
after its first 0.5 s, the energy a call (power x time) and the SM cycles a call (time x clock).
If a kernel that needs fewer cycles than another also needs more energy, a card held at its
power limit gives it a lower clock: a schedule change can then gain where the card has headroom
and nothing where it has none.

Backends: step 12 as built (build/steps), the same step from DIR (--before: a folder holding
12_three_warpgroups.so, e.g. the build before a change; its rows are named 12_before),
FlashAttention-4 (when installed) and SDPA cuDNN, in a rotating order over R rounds.
Needs torch with CUDA and nvidia-smi; LD_LIBRARY_PATH as for the other tools.
"""
import argparse
import ctypes
import csv
import datetime
import os
import subprocess
import sys
import time

SHAPES = [(4, 8, 16384, 64, 0), (4, 8, 16384, 64, 1), (4, 8, 16384, 128, 0), (4, 8, 4096, 128, 0)]
QUERY = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--before", default="", help="a folder with the step-12 build to compare")
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                    "python"))
    import flash_steps
    try:
        from flash_attn.cute.interface import flash_attn_func as fa4
    except Exception as e:  # FlashAttention-4 is optional
        print(f"power.py: no FlashAttention-4 here ({type(e).__name__}); its rows left out")
        fa4 = None

    steps = {"12": flash_steps.load(12)}
    if args.before:
        steps["12_before"] = flash_steps.load("12_three_warpgroups", args.before)
    backends = list(steps) + (["fa4"] if fa4 else []) + ["sdpa_cudnn"]

    def step_call(s, q, k, v, causal):
        p = flash_steps._problem(q, k, causal, None)
        o, lse = flash_steps._forward(s, p, q, k, v)
        ws = flash_steps._workspace(s, p, False, q.device)

        def call():
            st = s._forward(ctypes.byref(p), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                            lse.data_ptr(), ws.data_ptr(), torch.cuda.current_stream().cuda_stream)
            flash_steps._check(st, s, "forward", p)
            return o
        return call

    def make_call(backend, b, h, n, d, causal):
        if backend == "fa4":   # [B, N, H, D]
            q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            return lambda: fa4(q, k, v, causal=bool(causal))
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        if backend == "sdpa_cudnn":
            def call():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return sdpa(q, k, v, is_causal=bool(causal))
            return call
        return step_call(steps[backend], q, k, v, causal)

    # the sampler: one nvidia-smi for the whole run, its lines stamped by the host's clock (an
    # older driver without the clock-event reasons gets the query without them)
    query = QUERY
    if subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader"],
                      capture_output=True).returncode != 0:
        query = QUERY.rsplit(",", 1)[0]
    log = open(args.out + ".smi", "w")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader,nounits",
                            "-lms", "20"], stdout=log, stderr=subprocess.STDOUT)
    time.sleep(1.0)
    runs = []   # (backend, shape, round, t0, t1, ms a call, calls)
    stream = torch.cuda.Stream()
    for r in range(args.rounds):
        for (b, h, n, d, causal) in SHAPES:
            order = backends[r % len(backends):] + backends[:r % len(backends)]
            for be in order:
                with torch.cuda.stream(stream):
                    call = make_call(be, b, h, n, d, causal)
                    call()
                    stream.synchronize()
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, stream=stream):
                        call()
                    g.replay()
                    stream.synchronize()
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    t0 = time.time()
                    start.record()
                    calls = 0
                    while time.time() - t0 < args.secs:
                        for _ in range(20):
                            g.replay()
                        calls += 20
                        stream.synchronize()
                    end.record()
                    end.synchronize()
                    t1 = time.time()
                    ms = start.elapsed_time(end) / calls
                runs.append((be, f"{b},{h},{n},{n},{d}" + (",c" if causal else ""), r, t0, t1, ms, calls))
                print(f"{be:12s} {runs[-1][1]:22s} round {r}: {ms:.4f} ms a call, {calls} calls",
                      flush=True)
                del g
                torch.cuda.empty_cache()
                time.sleep(1.0)   # let the card settle between runs
    smi.terminate()
    smi.wait()
    log.close()

    samples = []   # (host time, MHz, W, reasons)
    for line in open(args.out + ".smi"):
        f = [x.strip() for x in line.split(",")]
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, float(f[1]), float(f[2]), f[4] if len(f) > 4 else ""))
        except (ValueError, IndexError):
            continue   # a header or a field this driver cannot give
    with open(args.out, "w", newline="") as fo:
        w = csv.writer(fo)
        w.writerow(["backend", "shape", "round", "ms", "calls", "sm_mhz", "watts", "mj_per_call",
                    "mcycles_per_call", "samples", "reasons"])
        for be, shape, r, t0, t1, ms, calls in runs:
            s = [x for x in samples if t0 + 0.5 <= x[0] <= t1]
            if not s:
                w.writerow([be, shape, r, f"{ms:.4f}", calls, "", "", "", "", 0, ""])
                continue
            mhz = sum(x[1] for x in s) / len(s)
            watts = sum(x[2] for x in s) / len(s)
            reasons = sorted({x[3] for x in s})
            w.writerow([be, shape, r, f"{ms:.4f}", calls, f"{mhz:.0f}", f"{watts:.1f}",
                        f"{watts * ms:.1f}", f"{ms * mhz / 1e3:.3f}", len(s), " ".join(reasons)])
    print(open(args.out).read())


if __name__ == "__main__":
    main()
