#!/usr/bin/env python3
"""tools/note_tables.py: the measurement table of a step's note, from a sweep CSV and its peers.

    tools/note_tables.py --sweep SWEEP.csv --peers PEERS.csv --step 11 --prev 10 \
        [--also old08_ce00115] (--meta meta.txt | --date 2026-11-30 --commit 7c6d069)

prints a markdown table: forward TFLOP/s of the step and of the step before it at N = 4096 and
16384 (Nq = Nk), D = 64 and 128, causal and not (bf16, B = 4, H = 8: the bar shapes), the ratio
of the two, and the ratio of the step to PyTorch SDPA's cuDNN and flash (FlashAttention-2)
backends, then one provenance line (GPU, date, commit). Ratios are of TFLOP/s (> 1: the step is
faster), taken within the files given, which should come from one call.

Both CSVs have the schema of `attn bench` / bench/peer_sdpa.py (gpu,step,pass,dtype,batch,heads,
seq_q,seq_k,head_dim,causal,ms_median,...,tflops,...,status). A leading `repeat` column (the
experiments' alternating rounds) is allowed: the rounds of a shape are averaged (mean TFLOP/s of
the rows whose status is ok), and the provenance line says how many there were.

A step is named by its folder name (07_wgmma) or by its number (07, 7); any other name
(old08_ce00115) exactly. Without --prev the step before is the highest-numbered step below it
that the sweep has; if the sweep has no rows of it, its columns are left out. --also adds one
more step's TFLOP/s and the ratio to it. The date and commit come from --date and --commit, or
from the key=value lines date= and git_sha= of a meta.txt (bench/results/<gpu>/meta.txt).

Python 3 standard library only.
"""
import argparse
import csv
import re
import sys

BAR_N = (4096, 16384)
BAR_D = (64, 128)
PEERS = (("sdpa_cudnn", "cuDNN"), ("sdpa_flash", "flash"))


def read_rates(path, batch, heads, dtype):
    """{(step, D, causal, N): [tflops, ...]} of the forward rows of one shape family; the gpu
    names seen."""
    rates, gpus = {}, set()
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                if (row["pass"] != "fwd" or row["dtype"] != dtype or int(row["batch"]) != batch
                        or int(row["heads"]) != heads or row["seq_q"] != row["seq_k"]
                        or row.get("status", "ok") != "ok" or not row["tflops"]):
                    continue
                key = (row["step"], int(row["head_dim"]), int(row["causal"]), int(row["seq_q"]))
                rates.setdefault(key, []).append(float(row["tflops"]))
                gpus.add(row["gpu"])
            except (KeyError, ValueError) as e:
                sys.exit(f"note_tables: {path}: unexpected row {row!r} ({e})")
    return rates, gpus


def step_number(name):
    m = re.match(r"(\d+)_", name)
    return int(m.group(1)) if m else None


def resolve(name, steps):
    """A step's name in the CSV from a folder name, a number, or an exact other name."""
    if name in steps:
        return name
    if name.isdigit():
        hits = [s for s in steps if step_number(s) == int(name)]
        if len(hits) == 1:
            return hits[0]
    return None


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def fmt_rate(x):
    return "–" if x is None else f"{x:.1f}"


def fmt_ratio(a, b):
    return "–" if a is None or b is None else f"{a / b:.3f}"


def short(name):
    """How a step is named in a column header: its number, or its whole name."""
    n = step_number(name)
    return f"{n:02d}" if n is not None else name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", required=True, help="the steps' CSV (attn bench)")
    ap.add_argument("--peers", required=True, help="SDPA's CSV (bench/peer_sdpa.py)")
    ap.add_argument("--step", required=True, help="the note's step: 11, 11_persistent")
    ap.add_argument("--prev", help="the step before (default: the highest-numbered one below)")
    ap.add_argument("--also", help="one more step to show beside it, e.g. old08_ce00115")
    ap.add_argument("--meta", help="a meta.txt with date= and git_sha= lines")
    ap.add_argument("--date", help="the date of the run (overrides --meta)")
    ap.add_argument("--commit", help="the commit that was measured (overrides --meta)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dtype", default="bf16")
    a = ap.parse_args()

    rates, gpus = read_rates(a.sweep, a.batch, a.heads, a.dtype)
    peer_rates, peer_gpus = read_rates(a.peers, a.batch, a.heads, a.dtype)
    steps = sorted({k[0] for k in rates})

    step = resolve(a.step, steps)
    if step is None:
        sys.exit(f"note_tables: no step {a.step!r} in {a.sweep} (it has: {', '.join(steps)})")
    if a.prev:
        prev = resolve(a.prev, steps)
        prev_label = short(prev) if prev else a.prev
        if prev is None:
            print(f"note_tables: no step {a.prev!r} in {a.sweep}: its columns are left out",
                  file=sys.stderr)
    else:
        below = [s for s in steps if step_number(s) is not None and step_number(step) is not None
                 and step_number(s) < step_number(step)]
        prev = max(below, key=step_number) if below else None
        prev_label = short(prev) if prev else None
    also = None
    if a.also:
        also = resolve(a.also, steps)
        if also is None:
            sys.exit(f"note_tables: no step {a.also!r} in {a.sweep}")

    def r(name, d, c, n, table=rates):
        return mean(table.get((name, d, c, n), []))

    me = short(step)
    cols = ["D", "causal", "N"]
    if prev:
        cols += [f"step {prev_label}"]
    cols += [f"**step {me}**"]
    if prev:
        cols += [f"{me} ÷ {prev_label}"]
    if also:
        cols += [also, f"{me} ÷ {short(also)}"]
    for peer, label in PEERS:
        cols += [peer, f"{me} ÷ {label}"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]

    n_rounds = set()
    for d in BAR_D:
        for c in (0, 1):
            for n in BAR_N:
                x = r(step, d, c, n)
                n_rounds.add(len(rates.get((step, d, c, n), [])))
                cells = [str(d), "yes" if c else "no", str(n)]
                if prev:
                    p = r(prev, d, c, n)
                    cells += [fmt_rate(p)]
                cells += ["**" + fmt_rate(x) + "**" if x is not None else "–"]
                if prev:
                    cells += [fmt_ratio(x, p)]
                if also:
                    y = r(also, d, c, n)
                    cells += [fmt_rate(y), fmt_ratio(x, y)]
                for peer, _ in PEERS:
                    y = r(peer, d, c, n, peer_rates)
                    cells += [fmt_rate(y), fmt_ratio(x, y)]
                lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))

    meta = {}
    if a.meta:
        with open(a.meta) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                meta[k] = v
    date = a.date or meta.get("date")
    commit = a.commit or meta.get("git_sha")
    gpu = ", ".join(sorted(g.replace("NVIDIA ", "") for g in gpus | peer_gpus)) or "GPU ?"
    if not (date and commit):
        print("note_tables: no date or commit (--meta, or --date and --commit)", file=sys.stderr)
    prov = f"{gpu}, {date or 'date ?'}, commit {commit or '?'}"
    rounds = max(n_rounds) if n_rounds else 0
    extra = f"; mean of {rounds} rounds" if rounds > 1 else ""
    print(f"\n{prov}. Forward TFLOP/s, {a.dtype}, B = {a.batch}, H = {a.heads}, Nq = Nk = N "
          f"(causal counts the visible half){extra}.")


if __name__ == "__main__":
    main()
