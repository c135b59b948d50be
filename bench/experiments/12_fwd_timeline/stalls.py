#!/usr/bin/env python3
"""Warp-stall samples of one kernel from Nsight Compute's SASS source page (ncu -i REP --page source
--csv --print-source sass, gzipped or not): the total by stall reason, and the instructions that
hold the most samples with the three reasons that dominate each, in program order around them.
Usage: stalls.py source_sass.csv[.gz] [N]"""
import csv, collections, gzip, sys

path = sys.argv[1]
n_top = int(sys.argv[2]) if len(sys.argv) > 2 else 20
f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
rows = list(csv.reader(f))
hdr, data = rows[1], [r for r in rows[2:] if len(r) >= len(rows[1])]
ix = {h: i for i, h in enumerate(hdr)}
reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
num = lambda r, c: int(r[ix[c]]) if r[ix[c]].isdigit() else 0
total = sum(num(r, "Warp Stall Sampling (All Samples)") for r in data)
print(f"{rows[0][1][:60]}...: {total} warp samples, {len(data)} instructions")
by_reason = collections.Counter({c: sum(num(r, c) for r in data) for c in reasons})
for c, v in by_reason.most_common(10):
    print(f"  {c:24s} {v:7d} {100 * v / total:5.1f} %")
print(f"\nthe {n_top} instructions with the most samples (index in program order):")
top = sorted(range(len(data)), key=lambda k: -num(data[k], "Warp Stall Sampling (All Samples)"))
for k in top[:n_top]:
    r = data[k]
    s = num(r, "Warp Stall Sampling (All Samples)")
    why = ", ".join(f"{c[6:]} {num(r, c)}" for c in sorted(reasons, key=lambda c: -num(r, c))[:3])
    print(f"  {k:5d} {s:6d} {100 * s / total:4.1f} %  {r[ix['Source']].strip()[:58]:58s} {why}")
