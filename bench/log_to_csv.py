#!/usr/bin/env python3
"""Rebuild a sweep CSV of `attn bench` from its progress lines, when the CSV itself was lost.

`attn bench` prints one progress line per measurement to stderr (bench.log in bench/run.sh):

    [  7/ 52] 08_tma_warp_specialized  fwd bf16 D=64  N=4096  non-causal:     0.313 ms   438.84 TFLOP/s  [...]
    [ 52/ 52] 00_materialized          bwd bf16 D=128 N=32768 non-causal: oom (...)  [...]

Measurement i of a step is the i-th (line, pass) of the sweep in bench/sweeps.txt, which gives
B, H, Nq, Nk; the script checks that D, N, causal and the pass printed agree with it. What the
progress line does not carry is left empty (ms_min, ms_max) or taken from another CSV of the same
sweep (workspace_bytes, which depends only on the step's formula and the shape: --workspace-from).
A timed row is `ok`: `attn bench` prints a status in the line only when it is not (oom,
unsupported, wrong, ...), and its last line says how many were wrong, changed or failed.

    bench/log_to_csv.py --sweep standard --log bench.log --gpu "NVIDIA H200" \
        --workspace-from old/standard.csv --out standard.csv
"""
import argparse
import csv
import os
import re
import sys

sys.dont_write_bytecode = True   # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_sdpa import HEADER, read_sweeps   # the one reading of bench/sweeps.txt in Python

LINE = re.compile(r"^\[\s*(\d+)/\s*(\d+)\] (\S+)\s+(fwd|bwd) (bf16|fp32) D=(\d+)\s+N=(\d+)\s+"
                  r"(causal|non-causal)\s*: (.*?)\s+\[elapsed")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweep", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--sweeps-file", default="bench/sweeps.txt")
    ap.add_argument("--workspace-from", required=True, help="a CSV of the same sweep")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    sweeps = read_sweeps(a.sweeps_file)
    if a.sweep not in sweeps:
        sys.exit(f"no sweep {a.sweep!r} in {a.sweeps_file}")
    meas = [dict(pass_=c[0], dtype=c[1], batch=c[2], heads=c[3], seq_q=c[4], seq_k=c[5],
                 head_dim=c[6], causal=c[7]) for c in sweeps[a.sweep]]
    ws = {}
    for r in csv.DictReader(open(a.workspace_from)):
        key = (r["step"], r["pass"], r["dtype"], r["batch"], r["heads"], r["seq_q"], r["seq_k"],
               r["head_dim"], r["causal"])
        ws[key] = r["workspace_bytes"]

    rows = []
    for raw in open(a.log):
        m = LINE.match(raw)
        if not m or int(m.group(2)) != len(meas):
            continue   # another sweep's lines (a different count), or not a progress line
        i, step, p, dtype, d, n, causal, rest = (int(m.group(1)), m.group(3), m.group(4),
                                                 m.group(5), int(m.group(6)), int(m.group(7)),
                                                 int(m.group(8) == "causal"), m.group(9))
        s = meas[i - 1]
        if (s["pass_"], s["dtype"], s["head_dim"], s["seq_q"], s["causal"]) != (p, dtype, d, n, causal):
            sys.exit(f"line {raw.strip()!r} does not match measurement {i} of the sweep: {s}")
        rest = rest.strip()
        t = re.match(r"([0-9.]+) ms\s+([0-9.]+) TFLOP/s$", rest)
        if t:
            ms, tf, status = t.group(1), t.group(2), "ok"
        else:
            ms, tf, status = "", "", rest.split(" ", 1)[0]
        key = (step, p, dtype, str(s["batch"]), str(s["heads"]), str(s["seq_q"]), str(s["seq_k"]),
               str(d), str(causal))
        if key not in ws and status != "unsupported":
            sys.exit(f"no workspace_bytes for {key} in {a.workspace_from}")
        w = ws.get(key, "0")
        rows.append([a.gpu, step, p, dtype, s["batch"], s["heads"], s["seq_q"], s["seq_k"], d,
                     causal, ms, "", "", tf, w, status])
    if not rows:
        sys.exit("no progress line of that sweep in the log")
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER.split(","))
        w.writerows(rows)
    print(f"{len(rows)} rows to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
