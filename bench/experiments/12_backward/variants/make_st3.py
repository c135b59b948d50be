#!/usr/bin/env python3
"""Three stages of the Q, dO, lse2, Di ring at D = 128 (two at D = 64, where a third does not fit
in 227 KB of shared memory): the producer's load for tile i + 3 then has two tiles' time to land
instead of one. Applied to step 12 at ee2eca7, or to make_edv.py's output.
Usage: make_st3.py OUT.cu [IN.cu]"""
import sys
out = sys.argv[1]
src = sys.argv[2] if len(sys.argv) > 2 else "steps/12_backward_wgmma/attention.cu"
s = open(src).read()

def rep(old, new):
    global s
    assert s.count(old) == 1, old[:70]
    s = s.replace(old, new)

rep("constexpr int BWD_STAGES = 2;   /* the Q, dO, lse2, Di ring */",
    "template <int D> __host__ __device__ constexpr int bwd_stages() { return D == 128 ? 3 : 2; }")
rep("""    constexpr int Bc = BWD_BC, Br = bwd_br<D>();
    /* dQ = dS K""", """    constexpr int Bc = BWD_BC, Br = bwd_br<D>(), BWD_STAGES = bwd_stages<D>();
    /* dQ = dS K""")
rep("""    constexpr int Br = bwd_br<D>();
    if (make_map(""", """    constexpr int Br = bwd_br<D>(), BWD_STAGES = bwd_stages<D>();
    if (make_map(""")
open(out, "w").write(s)
