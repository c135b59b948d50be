#!/usr/bin/env python3
"""epilogue: what a forward kernel's warps wait on outside its main loop, from Nsight Compute's
SASS source page (ncu --page source --csv --print-source sass). The loop's trips are the most
any HGMMA ran; every instruction that ran a different number of times is outside its unmasked
path (the masked tiles, each work tile's prologue and epilogue, the producer). Prints the
samples inside and outside, then the outside instructions with the most samples and their two
main stall reasons, and the samples of the global stores and of the instructions that wait on
them (long_sb or drain stalls after the first STG of the epilogue, LDGs excepted).
    python3 epilogue.py source_sass.csv.gz [N]"""
import csv, gzip, sys

rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
n_top = int(sys.argv[2]) if len(sys.argv) > 2 else 10
hdr, data = rows[1], [r for r in rows[2:] if len(r) >= len(rows[1])]
ix = {h: i for i, h in enumerate(hdr)}
num = lambda r, c: int(r[ix[c]]) if r[ix[c]].isdigit() else 0
reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
src = lambda r: r[ix["Source"]].strip()
op = lambda r: [t for t in src(r).split() if not t.startswith("@")][0].split(".")[0]
samples = lambda r: num(r, "Warp Stall Sampling (All Samples)")
trips = max(num(r, "Instructions Executed") for r in data if op(r) == "HGMMA")
total = sum(samples(r) for r in data)
inside = sum(samples(r) for r in data if num(r, "Instructions Executed") == trips)
print(f"{rows[0][1][:60]}...: {total} samples; the unmasked loop path {inside} "
      f"({100 * inside / total:.1f} %), outside {total - inside} ({100 * (total - inside) / total:.1f} %)")
outside = [(k, r) for k, r in enumerate(data) if num(r, "Instructions Executed") != trips and samples(r)]
for k, r in sorted(outside, key=lambda x: -samples(x[1]))[:n_top]:
    why = ", ".join(f"{c[6:]} {num(r, c)}" for c in sorted(reasons, key=lambda c: -num(r, c))[:2])
    print(f"  {k:5d} {samples(r):6d} {100 * samples(r) / total:4.1f} %  x{num(r, 'Instructions Executed'):<7d} "
          f"{src(r)[:52]:52s} {why}")
stg = [k for k, r in enumerate(data) if op(r) == "STG"]
if stg:
    first = stg[0]
    st = sum(samples(data[k]) for k in stg)
    waits = sum(num(r, "stall_long_sb") + num(r, "stall_drain") + num(r, "stall_lg")
                for k, r in enumerate(data) if k >= first and num(r, "Instructions Executed") != trips
                and op(r) not in ("LDG", "BRA", "SYNCS"))
    print(f"global stores (STG, {len(stg)} in the code): {st} samples; long_sb, drain and lg stalls of "
          f"the instructions from the first STG on (no loads, branches or mbarrier waits): {waits}; "
          f"together {100 * (st + waits) / total:.1f} % of the kernel's samples")
else:
    print("no STG in the kernel")
