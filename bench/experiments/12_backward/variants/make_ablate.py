#!/usr/bin/env python3
"""Ablations of step 12's tile loop, for timing only: each removes one piece of the dQ path, so
its dQ is WRONG (the bench marks the rows so) and dK, dV stay right. What a piece costs is the
time it takes away.
  noadd    the staging is written, the bulk reduce-add into dq_acc is not issued
  nostage  dQ = dS K is computed, neither staged nor added
  nodq     no dS^T store, no dQ product, no staging, no add (the stage is released after dV, dK)
  nobar    D = 128: the barrier between the two warpgroups before dQ becomes each one's own
           (dQ then reads the other warpgroup's dS^T unsynchronized)
  nofence  the staging's fence.proxy.async is left out (the bulk add may read stale staging)
  nobar1   the staging's first barrier is left out (a thread may overwrite the staging while
           the last add still reads it)
  stage2   D = 128, a correct change: two staging buffers per warpgroup, alternating by tile, so
           the add of tile i-1 only has to have read its buffer before tile i+1 (bulk_wait_read<1>)
Usage: make_ablate.py MODE OUT.cu [IN.cu]"""
import sys
mode, out = sys.argv[1], sys.argv[2]
src = sys.argv[3] if len(sys.argv) > 3 else "steps/12_backward_wgmma/attention.cu"
s = open(src).read()

def cut(begin, end, new="", keep_end=True):
    global s
    i0 = s.index(begin)
    i1 = s.index(end, i0)
    assert s.count(begin) == 1, begin
    s = s[:i0] + new + s[i1 if keep_end else i1 + len(end):]

if mode == "noadd":
    cut("            bulk_reduce_add_f32(dq_acc + piece", "        }\n    }\n    if (tid % WG == 0)\n        bulk_wait<0>();",
        "            (void)piece;\n")
elif mode == "nostage":
    cut("        const uint32_t stage = sdQ + wg * DQ;", "    }\n    if (tid % WG == 0)\n        bulk_wait<0>();")
elif mode == "nodq":
    cut("        /* dS^T to shared memory, [key][query]", "    }\n    if (tid % WG == 0)\n        bulk_wait<0>();",
        "        wgmma_wait<0>();\n        reg_fence(dv);\n        reg_fence(dk);\n        mbar_arrive(empty + 8 * st);\n")
elif mode == "nobar":
    old = "            named_bar_sync(1, 2 * WG);   /* both halves of dS^T are in */"
    assert s.count(old) == 1
    s = s.replace(old, "            named_bar_sync(2 + wg, WG);")
elif mode == "nofence":
    old = """        fence_proxy_async_smem();
        named_bar_sync(2 + wg, WG);
        if (tid % WG == 0) {"""
    assert s.count(old) == 1
    s = s.replace(old, """        named_bar_sync(2 + wg, WG);
        if (tid % WG == 0) {""")
elif mode == "nobar1":
    old = """        if (tid % WG == 0)
            bulk_wait_read<0>();
        named_bar_sync(2 + wg, WG);
"""
    assert s.count(old) == 1
    s = s.replace(old, """        if (tid % WG == 0)
            bulk_wait_read<0>();
""")
elif mode == "stage2":
    for old, new in [
        ("sL = sdQ + 2 * DQ,", "sL = sdQ + (SPLIT_N ? 4 : 2) * DQ,"),
        ("        const uint32_t stage = sdQ + wg * DQ;\n        if (tid % WG == 0)\n            bulk_wait_read<0>();",
         "        const uint32_t stage = sdQ + (SPLIT_N ? 2 * wg + i % 2 : wg) * DQ;\n        if (tid % WG == 0) {\n            if (SPLIT_N)\n                bulk_wait_read<1>();\n            else\n                bulk_wait_read<0>();\n        }"),
        ("                            2 * (D == 128 ? 1 : Br / 64) * BWD_DQ_FLOATS * 4 +",
         "                            (D == 128 ? 4 : 2 * Br / 64) * BWD_DQ_FLOATS * 4 +")]:
        assert s.count(old) == 1, old
        s = s.replace(old, new)
else:
    sys.exit("unknown mode " + mode)
open(out, "w").write(s)
