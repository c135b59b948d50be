#!/usr/bin/env python3
"""sass_loop: how many instructions a kernel's main loop issues per trip, read from its SASS.

    cuobjdump -sass X.so | python3 bench/experiments/tools/sass_loop.py NAME N [--list]

For each function whose mangled name contains NAME: the shortest loop (a backward branch and
the code it jumps back over) that holds exactly N HGMMA instructions, i.e. one trip of the main
loop (a forward key tile: D/16 + Bc/16 wgmmas; a backward query tile: 32). Prints its length
with every path counted, and the length of the path a trip takes when nothing is masked: from
the loop's head to its back branch, skipping each forward branch inside the loop whose skipped
code is mostly compares and selects (ISETP, FSEL: a mask) or that is unconditional, and falling
through every other (the retry branches of mbarrier waits, taken only while a copy is late).
Also prints how many of that path's instructions are not the arithmetic of attention (FMNMX,
FADD, FFMA, MUFU, FMUL, F2FP, HGMMA): the loop's bookkeeping. --list prints those. --waits
also prints, on that path, the MUFUs before and after the trip's wait for P V (WARPGROUP.DEPBAR
with nothing left in flight) and the instructions after its last MUFU (its tail); where a
forward branch jumps over a block of FMULs (O's rescale, 12_lazy_rescale), the same with it taken.
"""
import re
import sys

MATH = {"FMNMX", "FADD", "FFMA", "MUFU", "FMUL", "F2FP", "HGMMA"}


def opcode(text):
    t = text.split(None, 1)[1] if text.startswith("@") else text
    return t.split()[0].split(".")[0]


def functions(lines):
    cur, out = None, {}
    for line in lines:
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1)
            out[cur] = []
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and cur:
            out[cur].append((int(m.group(1), 16), m.group(2).strip()))
    return out


def main_loop(ins, n):
    where = {a: i for i, (a, _) in enumerate(ins)}
    best = None
    for i, (a, t) in enumerate(ins):
        m = re.search(r"BRA.*?0x([0-9a-f]+)", t)
        if m and int(m.group(1), 16) < a and int(m.group(1), 16) in where:
            lo = where[int(m.group(1), 16)]
            if sum("HGMMA" in x for _, x in ins[lo:i + 1]) == n and (best is None or i + 1 - lo < best[1] - best[0]):
                best = (lo, i + 1)
    return best


def unmasked_path(ins, lo, hi, skip_fmul=False):
    where = {a: i for i, (a, _) in enumerate(ins)}
    path, i = [], lo
    while i < hi:
        a, t = ins[i]
        path.append((a, t))
        m = re.search(r"(@!?U?P\w+ )?BRA.*?0x([0-9a-f]+)", t)
        if m and i < hi - 1:
            tgt = int(m.group(2), 16)
            if tgt in where and lo <= where[tgt] < hi and tgt > a:
                skipped = ins[i + 1:where[tgt]]
                if not m.group(1) or sum(opcode(x) in ("ISETP", "FSEL") for _, x in skipped) > 20 or \
                        (skip_fmul and sum(opcode(x) == "FMUL" for _, x in skipped) >= 0.9 * len(skipped)):
                    i = where[tgt]
                    continue
        i += 1
    return path


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    name, n, show, waits = sys.argv[1], int(sys.argv[2]), "--list" in sys.argv, "--waits" in sys.argv
    for f, ins in sorted(functions(sys.stdin).items()):
        if name not in f:
            continue
        loop = main_loop(ins, n)
        short = re.sub(r"EEv.*", "", re.sub(r"^_Z[0-9]+", "", f))
        if loop is None:
            print(f"  {short}: no loop with {n} HGMMAs")
            continue
        path = unmasked_path(ins, *loop)
        book = [(a, t) for a, t in path if opcode(t) not in MATH]
        print(f"  {short}: {loop[1] - loop[0]} instructions a trip (every path), "
              f"{len(path)} unmasked, {len(book)} of them bookkeeping")
        for skip in (False, True) if waits else ():
            p = unmasked_path(ins, *loop, skip_fmul=skip)
            if skip and len(p) == len(path):
                break   # no branch around a block of FMULs (O's rescale) in this loop
            ops = [opcode(t) for _, t in p]
            w0 = [i for i, (_, t) in enumerate(p) if "DEPBAR" in t and t.rstrip().endswith("0x0")]
            mufu = [i for i, o in enumerate(ops) if o == "MUFU"]
            if w0 and mufu:
                print(f"      {'rescale skipped: ' if skip else ''}{len(p)} instructions; MUFU before "
                      f"the wait for P V {sum(i < w0[0] for i in mufu)}, after it "
                      f"{sum(i > w0[0] for i in mufu)}; {len(ops) - 1 - mufu[-1]} after the last MUFU")
        if show:
            for a, t in book:
                print(f"      {a:05x} {t}")


if __name__ == "__main__":
    main()
