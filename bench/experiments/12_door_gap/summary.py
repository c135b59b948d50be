#!/usr/bin/env python3
"""summary: what 12_door_gap's two calls measured, in a few lines per question.
    python3 summary.py DIR1 DIR2      (the OUT folders of run.sh 1 and run.sh 2)
    python3 summary.py                (this folder's ab_runs.csv and door_runs.csv: the same CSVs,
                                       each row tagged with its file's name in a column `run`)
1. Does the data move our steps' time in ab (attn bench's way of timing)? Per pass and shape, the
   step's median time over rounds on Gaussian inputs over uniform ones (ab_*_normal_1.csv over
   ab_*_uniform_1.csv), and the forward's uniform run repeated at the end (drift).
2. Does the data move every backend in the door alike? Per pass, shape and backend, the time on
   uniform inputs over randn ones (door_*_uniform.csv over door_*_randn.csv), then the step's
   ratios to the peers on each (tools/interleaved.py's, printed by run.sh 2 in door_ratios.txt);
   and the forward timed eagerly over its graph replays (door_fwd_eager.csv over door_fwd_randn.csv).
3. The clock and power of each phase: the mean SM clock, power and temperature over the samples
   of smi.csv that fall in it (phases.txt gives each phase's start).
Standard library only."""
import csv
import datetime
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

def rows(path):
    """The rows of one CSV, or of the committed file of all of them that holds its name in `run`."""
    if os.path.exists(path):
        return list(csv.DictReader(open(path)))
    run = os.path.basename(path)[:-4]
    both = os.path.join(HERE, "door_runs.csv" if run.startswith("door") else "ab_runs.csv")
    return [r for r in csv.DictReader(open(both)) if r["run"] == run] if os.path.exists(both) else []


def ab_times(path):
    """{(pass, shape, causal): median over rounds of ms_median} of one ab CSV."""
    t = {}
    for r in rows(path):
        t.setdefault((r["pass"], r["shape"], r["causal"]), []).append(float(r["ms_median"]))
    return {k: statistics.median(v) for k, v in t.items()}


def door_times(path):
    """{(pass, shape, step): median over rounds of ms_median} of one peer_sdpa.py CSV."""
    t = {}
    for r in rows(path):
        if r["status"] != "ok":
            continue
        shape = ",".join(r[k] for k in ("batch", "heads", "seq_q", "seq_k", "head_dim")) + \
            (",c" if r["causal"] == "1" else "")
        t.setdefault((r["pass"], shape, r["step"]), []).append(float(r["ms_median"]))
    return {k: statistics.median(v) for k, v in t.items()}


def clocks(d):
    """[(phase, n, MHz, W, C)] from phases.txt and smi.csv in d."""
    pf, sf = os.path.join(d, "phases.txt"), os.path.join(d, "smi.csv")
    if not (os.path.exists(pf) and os.path.exists(sf)):
        return []
    tod = lambda s: datetime.datetime.strptime(s[:15], "%H:%M:%S.%f").time()
    phases = [(tod(line.split()[0]), " ".join(line.split()[1:])) for line in open(pf) if line.strip()]
    samples = []
    for r in csv.reader(open(sf)):
        try:   # timestamp "2026/12/02 08:00:00.123", "1980 MHz", "650.12 W", "45"
            ts = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").time()
            samples.append((ts, float(r[1].split()[0]), float(r[2].split()[0]), float(r[3])))
        except (ValueError, IndexError):
            continue
    out = []
    for i, (start, name) in enumerate(phases):
        end = phases[i + 1][0] if i + 1 < len(phases) else datetime.time(23, 59, 59)
        s = [x for x in samples if start <= x[0] < end]
        if s and name != "end":
            out.append((name, len(s), statistics.mean(x[1] for x in s), statistics.mean(x[2] for x in s),
                        statistics.mean(x[3] for x in s)))
    return out


def main():
    d1, d2 = sys.argv[1:3] if len(sys.argv) > 2 else (HERE, HERE)
    print("1. ab, Gaussian over uniform inputs (time; > 1: Gaussian slower), and uniform again at the end")
    for p in ("fwd", "bwd"):
        u, n = ab_times(f"{d1}/ab_{p}_uniform_1.csv"), ab_times(f"{d1}/ab_{p}_normal_1.csv")
        u2 = ab_times(f"{d1}/ab_{p}_uniform_2.csv")
        for k in sorted(u, key=lambda k: (int(k[1].split(",")[4]), int(k[1].split(",")[2]), k[2])):
            if k in n:
                again = f", uniform again {u2[k] / u[k]:.3f}" if k in u2 else ""
                print(f"   {p} {k[1]}{' causal' if k[2] == '1' else ''}: {n[k] / u[k]:.3f}{again}")
    print("2. the door, uniform over randn inputs (time; < 1: uniform faster)")
    for p in ("fwd", "bwd"):
        r, u = door_times(f"{d2}/door_{p}_randn.csv"), door_times(f"{d2}/door_{p}_uniform.csv")
        shapes = sorted({k[1] for k in r})
        for sh in shapes:
            cells = [f"{k[2]} {u[k] / r[k]:.3f}" for k in sorted(r) if k[1] == sh and k in u]
            print(f"   {p} {sh}: " + ", ".join(cells))
    r, e = door_times(f"{d2}/door_fwd_randn.csv"), door_times(f"{d2}/door_fwd_eager.csv")
    if e:
        print("   eager over graph replay (time), forward, randn")
        for sh in sorted({k[1] for k in r}):
            cells = [f"{k[2]} {e[k] / r[k]:.3f}" for k in sorted(r) if k[1] == sh and k in e]
            print(f"   fwd {sh}: " + ", ".join(cells))
    print("3. clock, power, temperature by phase")
    for d in (d1, d2):
        for name, n, mhz, w, c in clocks(d):
            print(f"   {name:28s} {n:4d} samples  {mhz:6.0f} MHz  {w:5.0f} W  {c:3.0f} C")


if __name__ == "__main__":
    main()
