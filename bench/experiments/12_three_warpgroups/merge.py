#!/usr/bin/env python3
"""Put the run of steps 12 and 13 (2_bench.sh, 3_checks.sh at commit SHA) into the canonical results,
in place of the rows of the backward when it was step 12 (12_backward_wgmma):
  standard.csv        the old backward's rows out, the run's rows of 12 and 13 in
  peers_standard.csv  sdpa_flash and sdpa_cudnn replaced by the run's, its fa4 rows added
                      (sdpa_efficient and sdpa_math stay from the full sweep)
  check.txt/.csv, check_far.txt/.csv  the old backward's part out, the run's part appended after a
                      ==== line
Usage: merge.py SHA BENCH_DIR CHECK_DIR   (run once, from the repository root)"""
import csv, sys
sha, bench, checks = sys.argv[1:4]
R = "bench/results/h200/"
OLD = "12_backward_wgmma"

def rows(path):
    with open(path, newline="") as f:
        r = csv.reader(f)
        return next(r), list(r)

def write(path, header, body):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(body)

h, old = rows(R + "standard.csv")
hn, new = rows(bench + "/standard.csv")
assert h == hn
write(R + "standard.csv", h, [r for r in old if r[1] != OLD] + new)
h, old = rows(R + "peers_standard.csv")
hn, new = rows(bench + "/peers_standard.csv")
assert h == hn
write(R + "peers_standard.csv", h, [r for r in old if r[1] not in ("sdpa_flash", "sdpa_cudnn")] + new)
for name, what in (("check", "attn check --steps 12,13"), ("check_far", "attn check --steps 12,13 --inputs far")):
    h, old = rows(R + name + ".csv")
    hn, new = rows(checks + "/" + name + ".csv")
    assert h == hn
    write(R + name + ".csv", h, [r for r in old if r[0] != OLD] + new)
    text = open(R + name + ".txt").read().split("\n")
    keep, skip, after_old = [], False, False
    for line in text:
        if line.startswith("==== "):
            skip = OLD[:2] in line.split("--steps ")[-1].split(" ")[0].split(",")
        if skip:
            continue
        if line.startswith(OLD):   # a case or summary line of the old backward
            after_old = True
            continue
        if after_old and line.startswith(" "):   # its summary's per-dtype lines
            continue
        after_old = False
        keep.append(line)
    while keep and keep[-1] == "":
        keep.pop()
    part = open(checks + "/" + name + ".txt").read().rstrip("\n")
    keep.append("==== %s (commit %s, the later run of the two new steps)" % (what, sha))
    keep.append(part)
    open(R + name + ".txt", "w").write("\n".join(keep) + "\n")
