#!/usr/bin/env python3
"""segments: the forward loop's warp samples per key, step 12 (the sums pinned) beside
FlashAttention-4, from Nsight Compute's SASS source pages (ncu --page source --csv
--print-source sass) of one launch each at 4,8,4096,4096,128, not causal.

    python3 segments.py timeline_run/source_sass.csv.gz fa4_run/ncu_fa4.csv.gz

A loop trip's samples divided by the times a trip ran (its first instruction's executions), per
key (step 12: 160 keys a trip, FA4: 128); and per instruction, by opcode, over the loop's
softmax part (MUFU, FMNMX, FADD, FFMA) and its rescale and packing (FMUL, F2FP). The loop bounds
are instruction indexes in these two profiles (checked: the loop's back branch and its first
TRYWAIT)."""
import collections, csv, gzip, sys


def load(path):
    rows = list(csv.reader(gzip.open(path, "rt")))
    hdr, data = rows[1], [r for r in rows[2:] if len(r) >= len(rows[1])]
    ix = {h: i for i, h in enumerate(hdr)}
    num = lambda r, c: int(r[ix[c]]) if r[ix[c]].isdigit() else 0
    return [(num(r, "Warp Stall Sampling (All Samples)"), num(r, "Instructions Executed"),
             r[ix["Source"]].strip()) for r in data]


def opcode(src):
    t = src.split()
    t = t[1] if t[0].startswith("@") else t[0]
    return t.split(".")[0]


# (first, last + 1) instruction of the loop trip, keys per trip
LOOPS = {"step 12": (1311, 2290, 160), "FA4": (773, 1228, 128)}
# from the turn's barrier to the wait for S done, inclusive: issuing S and P V, and that wait
ISSUE = {"step 12": (1338, 1416), "FA4": (786, 847)}
res = {}
for name, path in zip(LOOPS, sys.argv[1:3]):
    d = load(path)
    a, b, keys = LOOPS[name]
    assert "BRA" in d[b - 1][2] or "BRA" in d[b - 1][2], d[b - 1]
    trips = max(e for _, e, _ in d[a:b])
    samples = sum(s for s, _, _ in d[a:b])
    by_op = collections.Counter()
    n_op = collections.Counter()
    for s, e, src in d[a:b]:
        if e == trips:   # the unmasked path only
            by_op[opcode(src)] += s
            n_op[opcode(src)] += 1
    i0, i1 = ISSUE[name]
    print(f"  {name}: issuing S and P V and waiting for S, {sum(x for x, _, _ in d[i0:i1]) / trips / keys:.6f} a key")
    res[name] = (samples / trips / keys, {k: (by_op[k] / trips, n_op[k]) for k in by_op})
    print(f"{name}: {trips} trips, {samples} samples in the loop, {samples / trips / keys:.6f} a key")
r = res["step 12"][0] / res["FA4"][0]
print(f"loop time per key, step 12 / FA4: {r:.3f}")
print("per instruction (samples a trip / instructions of that opcode), step 12 / FA4:")
for ops in (("MUFU",), ("FMNMX",), ("FADD",), ("FFMA",), ("FMUL", "F2FP")):
    v = []
    for name in ("step 12", "FA4"):
        per = res[name][1]
        s = sum(per.get(o, (0, 0))[0] for o in ops)
        n = sum(per.get(o, (0, 0))[1] for o in ops)
        v.append((s / n if n else 0, n))
    print(f"  {'+'.join(ops):10s} {v[0][1]:3d} and {v[1][1]:3d} a trip: {v[0][0] / v[1][0]:.2f}")
