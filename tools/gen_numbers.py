#!/usr/bin/env python3
"""tools/gen_numbers.py: the numbers the README and the notes quote from committed results, generated.

A quoted number sits between two markers, in the text where it is read:

    ... passed all <!-- n:pass 07 -->198<!-- /n --> bf16 cases ...
    | 11_persistent | ... | <!-- n:range 11 sdpa_cudnn fwd -->0.90–1.18<!-- /n -->× cuDNN | ...

The markers are HTML comments, so the rendered page shows the number alone. The key after `n:`
says how the number is made, from the files of bench/results/<gpu>/ (h200 unless --results):

    pass STEP [FILE]       PASS count of STEP in the summary of an `attn check` log
                           (FILE: check.txt unless given, e.g. check_far.txt)
    pass_all [FILE]        the PASS counts of every step there, summed
    gpu_pass STEP GRID     PASS count of STEP in the GPU tests' grid GRID (normal_inputs,
                           large_scores, late_maximum, far_from_zero) of gpu_tests.txt
    gpu_worst STEP DTYPE TENSOR [GRID,...]
                           the worst whole-tensor rel-L2 of STEP's passing cases in those grids
                           (default: all four), as gpu_tests.txt prints it ("2.3e-03")
    check_worst STEP DTYPE TENSOR [FILE]
                           the worst whole-tensor rel-L2 of STEP's passing cases in check.csv (or
                           FILE, e.g. check_far.csv), "2.3e-03"; check_worst_block: the same of
                           the worst 64-row block
    range A B PASS [D=64,128] [N=4096,16384] [causal=0,1]
                           min–max over those shapes of TFLOP/s(A) / TFLOP/s(B), A and B each a
                           step (number or name) or an SDPA peer (sdpa_cudnn, sdpa_flash, ...),
                           PASS fwd or bwd, from standard.csv and peers_standard.csv (bf16,
                           B = 4, H = 8, Nq = Nk), printed "0.90–1.18" (two decimals; one
                           number when both ends print alike)
    tflops A PASS D N causal
                           one TFLOP/s value, one decimal
    ... sweep=NAME         (range, tflops) from NAME.csv and peers_NAME.csv instead of the
                           standard sweep's (sweep=bars: the eight bar shapes, bench/sweeps.txt)
    ... in=FOLDER          (range, tflops) from FOLDER's standard.csv and peers_standard.csv,
                           (gbps, decode_range) from its decode.csv and peers_decode.csv,
                           instead: a folder of one run (an experiment's), relative to the
                           repository, for ratios that must come from one run
    irange A B PASS [D=64,128] [N=4096,16384] [causal=0,1]
                           as range, from interleaved_PASS.csv (bench/peer_sdpa.py --steps
                           --rounds: steps and peers through one harness, on the same inputs,
                           each shape's calls back to back): per shape the median over rounds of
                           the same round's ratio, then their min-max
    imet A B PASS BAR [D=..] [N=..] [causal=..]
                           how many of those shapes have that median ratio, rounded to three
                           decimals as interleaved.py prints it, >= BAR: "3 of 8"
    gbps A B,H,Nq,Nk,D[,H_kv]
                           GB/s of K and V read by A (a step or peer) at that decode shape, from
                           decode.csv and peers_decode.csv (their gbps column), "4,312"
    decode_range A B [B,H,Nq,Nk,D,H_kv ...]
                           min–max of gbps(A) / gbps(B) over the shapes given (default: the six
                           decode bar shapes, the first six of the decode sweep), B a step, a
                           peer, or `best`: the fastest peer at each shape; "1.02–1.11"

    tools/gen_numbers.py --check FILE...   exit 1, naming file, line, key, the text and the value, if
                                       any marked number differs from what the results give
    tools/gen_numbers.py --write FILE...   rewrite the marked numbers in place (make readme does)

Python 3 standard library only. make test runs --check on README.md and notes/*.md
(tests/generated_numbers.sh), so a number that no longer matches the committed results fails it.
"""
import argparse
import csv
import os
import re
import sys

MARK = re.compile(r"<!-- n:([^>]*?) -->(.*?)<!-- /n -->")


class Results:
    def __init__(self, folder):
        self.folder = folder
        self._logs = {}
        self._rates = None
        self.sweep = "standard"   # range, tflops: its CSVs (sweep=NAME)

    def path(self, name):
        return os.path.join(self.folder, name)

    def summary(self, log):
        """{step name: PASS count} from the summary lines of an attn check log."""
        if log not in self._logs:
            counts = {}
            with open(self.path(log)) as f:
                for line in f:
                    m = re.match(r"^(?:\[----\] )?(\d\d_\w+)\s+PASS\s+(\d+)\s+FAIL\s+\d+", line)
                    if m:
                        counts[m.group(1)] = int(m.group(2))
            if not counts:
                raise ValueError("%s has no summary lines" % self.path(log))
            self._logs[log] = counts
        return self._logs[log]

    def gpu_grids(self):
        """{grid name: {step name: PASS count}} from gpu_tests.txt: each grid test prints its
        summary and then its own [PASS] or [FAIL] line."""
        grids, worst, block, wblock, step = {}, {}, {}, {}, None
        with open(self.path("gpu_tests.txt")) as f:
            for line in f:
                m = re.match(r"^\[----\] (\d\d_\w+)\s+PASS\s+(\d+)\s+FAIL\s+\d+", line)
                if m:
                    step = m.group(1)
                    block[step] = int(m.group(2))
                m = re.match(r"^\[----\]\s+(fp32|bf16):\s+(.*)$", line)
                if m and step:
                    for t, v in re.findall(r"(\w+) ([0-9.e+-]+) \(", m.group(2)):
                        wblock[(step, m.group(1), t)] = v
                m = re.match(r"^\[(?:PASS|FAIL)\] gpu::grid_(\w+):", line)
                if m:
                    grids[m.group(1)], worst[m.group(1)] = block, wblock
                    block, wblock, step = {}, {}, None
        self._gpu_worst = worst
        return grids

    def check_worst(self, step, dtype, tensor, name, column="rel_l2"):
        worst = None
        with open(self.path(name), newline="") as f:
            for row in csv.DictReader(f):
                if (row["step"] == step and row["dtype"] == dtype and row["tensor"] == tensor
                        and row["verdict"] == "PASS"):
                    v = float(row[column])
                    worst = v if worst is None or v > worst else worst
        if worst is None:
            raise ValueError("no passing %s %s %s in %s" % (step, dtype, tensor, name))
        return "%.1e" % worst

    def rates(self):
        """{(step, pass, D, N, causal): tflops} of the sweep (standard unless sweep=) and its peers."""
        if self._rates is None:
            self._rates = {}
            for name in (self.sweep + ".csv", "peers_" + self.sweep + ".csv"):
                with open(self.path(name), newline="") as f:
                    for row in csv.DictReader(f):
                        if (row.get("status") != "ok" or row["dtype"] != "bf16"
                                or row["batch"] != "4" or row["heads"] != "8"
                                or row["seq_q"] != row["seq_k"] or not row["tflops"]):
                            continue
                        key = (row["step"], row["pass"], int(row["head_dim"]),
                               int(row["seq_q"]), int(row["causal"]))
                        self._rates[key] = float(row["tflops"])   # the last row of a shape wins
        return self._rates

    def interleaved(self, p):
        """{(step, D, N, causal): [(round, tflops)]} of interleaved_PASS.csv."""
        out = {}
        with open(self.path("interleaved_%s.csv" % p), newline="") as f:
            for row in csv.DictReader(f):
                if (row.get("status") != "ok" or row["pass"] != p or row["dtype"] != "bf16"
                        or row["seq_q"] != row["seq_k"] or not row["tflops"]):
                    continue
                key = (row["step"], int(row["head_dim"]), int(row["seq_q"]), int(row["causal"]))
                out.setdefault(key, []).append((row.get("round", "1"), float(row["tflops"])))
        return out

    def decode_rates(self):
        """{(step, (B, H, Nq, Nk, D, H_kv)): gbps} of the decode sweep and its peers."""
        if getattr(self, "_decode", None) is None:
            self._decode = {}
            for name in ("decode.csv", "peers_decode.csv"):
                if not os.path.exists(self.path(name)):
                    continue
                with open(self.path(name), newline="") as f:
                    for row in csv.DictReader(f):
                        if row.get("status") != "ok" or row["pass"] != "fwd" or not row.get("gbps"):
                            continue
                        shape = tuple(int(row[k]) for k in ("batch", "heads", "seq_q", "seq_k",
                                                            "head_dim"))
                        shape += (int(row.get("heads_kv") or row["heads"]),)
                        self._decode[(row["step"], shape)] = float(row["gbps"])
        return self._decode

    def step_name(self, spec, names):
        if spec.startswith("sdpa_") or spec in names:
            return spec
        if spec.isdigit():
            for n in names:
                if re.match(r"%02d_" % int(spec), n):
                    return n
        raise ValueError("no step or peer %r in the results" % spec)


def parse_opts(words):
    opts = {"D": [64, 128], "N": [4096, 16384], "causal": [0, 1]}
    for w in words:
        k, _, v = w.partition("=")
        if k not in opts or not v:
            raise ValueError("unknown option %r" % w)
        opts[k] = [int(x) for x in v.split(",")]
    return opts


def fmt_range(r):
    """min-max of the ratios r, two decimals: "1.02-1.11", or one number when they round alike."""
    lo, hi = "%.2f" % min(r), "%.2f" % max(r)
    return lo if lo == hi else lo + "–" + hi


def value(key, res):
    words = key.split()
    kind, args = words[0], words[1:]
    if kind in ("range", "tflops", "gbps", "decode_range"):   # in=FOLDER: another run's results
        where = [w[3:] for w in args if w.startswith("in=")]
        sweep = [w[6:] for w in args if w.startswith("sweep=")]
        args = [w for w in args if not w.startswith(("in=", "sweep="))]
        if where or sweep:
            res = Results(where[0] if where else res.folder)
            res.sweep = sweep[0] if sweep else "standard"
    if kind == "pass":
        counts = res.summary(args[1] if len(args) > 1 else "check.txt")
        return str(counts[res.step_name(args[0], counts)])
    if kind == "gpu_pass":
        counts = res.gpu_grids()[args[1]]
        return str(counts[res.step_name(args[0], counts)])
    if kind == "gpu_worst":
        grids = res.gpu_grids()
        step = res.step_name(args[0], grids["normal_inputs"])
        names = args[3].split(",") if len(args) > 3 else sorted(grids)
        vals = [res._gpu_worst[g][(step, args[1], args[2])] for g in names
                if (step, args[1], args[2]) in res._gpu_worst[g]]
        if not vals:
            raise ValueError("no %s %s of %s in the GPU tests' grids" % (args[1], args[2], step))
        return max(vals, key=float)
    if kind in ("check_worst", "check_worst_block"):
        counts = res.summary("check.txt")
        name = args[3] if len(args) > 3 else "check.csv"
        return res.check_worst(res.step_name(args[0], counts), args[1], args[2], name,
                               "rel_l2" if kind == "check_worst" else "block_rel_l2")
    if kind == "pass_all":
        return str(sum(res.summary(args[0] if args else "check.txt").values()))
    if kind in ("range", "tflops"):
        rates = res.rates()
        names = {k[0] for k in rates}
        if kind == "tflops":
            a, p, d, n, c = args
            return "%.1f" % rates[(res.step_name(a, names), p, int(d), int(n), int(c))]
        a, b, p = res.step_name(args[0], names), res.step_name(args[1], names), args[2]
        o = parse_opts(args[3:])
        r = [rates[(a, p, d, n, c)] / rates[(b, p, d, n, c)]
             for d in o["D"] for n in o["N"] for c in o["causal"]
             if (a, p, d, n, c) in rates and (b, p, d, n, c) in rates]
        if not r:
            raise ValueError("no shape has both %s and %s" % (a, b))
        return fmt_range(r)
    if kind in ("irange", "imet"):
        bar = float(args.pop(3)) if kind == "imet" else None
        rows = res.interleaved(args[2])
        names = {k[0] for k in rows}
        a, b = res.step_name(args[0], names), res.step_name(args[1], names)
        o = parse_opts(args[3:])
        r = []
        for d in o["D"]:
            for n in o["N"]:
                for c in o["causal"]:
                    rb = dict(rows.get((b, d, n, c), []))
                    x = sorted(t / rb[rd] for rd, t in rows.get((a, d, n, c), []) if rd in rb)
                    if x:
                        r.append(x[len(x) // 2] if len(x) % 2 else (x[len(x) // 2 - 1] + x[len(x) // 2]) / 2)
        if not r:
            raise ValueError("no interleaved shape has both %s and %s" % (a, b))
        if kind == "imet":
            return "%d of %d" % (sum(1 for x in r if round(x, 3) >= bar), len(r))
        return fmt_range(r)
    if kind in ("gbps", "decode_range"):
        rates = res.decode_rates()
        names = {k[0] for k in rates}
        peers = sorted(n for n in names if n.startswith("sdpa_") or n == "fa4")

        def shape(s):
            v = [int(x) for x in s.split(",")]
            return tuple(v) if len(v) == 6 else tuple(v) + (v[1],)

        def rate(step, sh):
            if step != "best":
                return rates.get((res.step_name(step, names | {"fa4"}), sh))
            have = [rates[(p, sh)] for p in peers if (p, sh) in rates]
            return max(have) if have else None
        if kind == "gbps":
            v = rate(args[0], shape(args[1]))
            if v is None:
                raise ValueError("no decode row of %s at %s" % (args[0], args[1]))
            return "{:,.0f}".format(v)
        shapes = [shape(s) for s in args[2:]] or [shape(s) for s in DECODE_BARS]
        r = [rate(args[0], sh) / rate(args[1], sh) for sh in shapes
             if rate(args[0], sh) and rate(args[1], sh)]
        if not r:
            raise ValueError("no decode shape has both %s and %s" % (args[0], args[1]))
        return fmt_range(r)
    raise ValueError("unknown key %r" % kind)


# The decode bar shapes, B,H,Nq,Nk,D,H_kv: the first six lines of bench/sweeps.txt's decode sweep.
DECODE_BARS = ("8,32,1,32768,128,32", "8,32,1,32768,64,32", "8,32,1,32768,128,8",
               "64,32,1,4096,128,8", "1,32,1,131072,128,8", "8,32,4,32768,128,8")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true")
    g.add_argument("--write", action="store_true")
    ap.add_argument("--results", default="bench/results/h200")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    res = Results(a.results)
    stale = marks = 0
    for path in a.files:
        with open(path) as f:
            lines = f.read().split("\n")
        changed = False
        for i, line in enumerate(lines):
            def sub(m):
                nonlocal stale, marks, changed
                marks += 1
                try:
                    v = value(m.group(1), res)
                except (ValueError, KeyError, IndexError, OSError) as e:
                    sys.exit("%s:%d: n:%s: %s" % (path, i + 1, m.group(1), e))
                if v != m.group(2):
                    stale += 1
                    changed = True
                    if a.check:
                        print("%s:%d: n:%s says %r, the results give %r"
                              % (path, i + 1, m.group(1), m.group(2), v))
                return "<!-- n:%s -->%s<!-- /n -->" % (m.group(1), v)
            lines[i] = MARK.sub(sub, line)
        if a.write and changed:
            with open(path, "w") as f:
                f.write("\n".join(lines))
    if a.check:
        print("tools/gen_numbers.py: %d generated numbers in %d files, %d stale"
              % (marks, len(a.files), stale))
        return 1 if stale else 0
    print("tools/gen_numbers.py: %d generated numbers, %d rewritten" % (marks, stale))
    return 0


if __name__ == "__main__":
    sys.exit(main())
