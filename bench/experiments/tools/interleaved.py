#!/usr/bin/env python3
"""interleaved: the ratios of our steps to the peers from bench/peer_sdpa.py --steps ... --rounds R
(rows of one shape and round ran back to back). Per pass and shape: each backend's median
TFLOP/s over the rounds, then each step over each peer and over each lower-numbered step, the
median ratio of the rounds and their range (a ratio per round, from the same round's rows); then
each backend's spread within its calls, the median over rounds of ms_median / ms_min (a call
whose repetitions ran at two clocks shows it: 1.00 when they all ran alike).
    python3 interleaved.py FILE.csv"""
import csv, collections, statistics, sys

rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "ok"]
tf = collections.defaultdict(dict)   # (pass, shape) -> {(step, round): tflops}
spread = collections.defaultdict(list)   # (pass, shape, step) -> [ms_median / ms_min]
for r in rows:
    hkv = r.get("heads_kv") or r["heads"]   # grouped-query shapes: B,H/H_kv,...
    shape = (f"{r['batch']},{r['heads']}" + (f"/{hkv}" if hkv != r["heads"] else "")
             + f",{r['seq_q']},{r['seq_k']},{r['head_dim']}" + (",c" if r["causal"] == "1" else ""))
    tf[(r["pass"], shape)][(r["step"], r.get("round", "1"))] = float(r["tflops"])
    if float(r["ms_min"]) > 0:
        spread[(r["pass"], shape, r["step"])].append(float(r["ms_median"]) / float(r["ms_min"]))
ours = lambda s: s[:2].isdigit()
for key in sorted(tf, key=lambda k: (k[0], k[1])):
    d = tf[key]
    names = sorted({s for s, _ in d})
    med = {s: statistics.median(v for (x, _), v in d.items() if x == s) for s in names}
    print(f"{key[0]} {key[1]}: " + ", ".join(f"{s} {med[s]:.1f}" for s in names))
    for s in filter(ours, names):
        # the peers, then any earlier step of ours (two steps with the same forward in lockstep,
        # one of them a build in its place: 12_lazy_rescale's run.sh lockstep)
        for peer in [n for n in names if not ours(n)] + [n for n in names if ours(n) and n < s]:
            rs = [d[(s, rd)] / d[(peer, rd)] for (x, rd) in d if x == s and (peer, rd) in d]
            if rs:
                print(f"    {s} / {peer}: {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f}, {len(rs)} rounds)")
    print("    spread (median / min): " + ", ".join(
        f"{s} {statistics.median(spread[(key[0], key[1], s)]):.3f}" for s in names if spread[(key[0], key[1], s)]))
