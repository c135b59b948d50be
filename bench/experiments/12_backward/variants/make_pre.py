#!/usr/bin/env python3
"""lse2 and Di read from shared memory into registers before the waits that precede their use,
not after: in call 17's profile the first FFMA of P^T = 2^(S^T c - lse2) waits on its LDS (short
scoreboard, 4.3 % of all warp samples, 9 % over the exponent's loads), because the loads are
issued only once wgmma.wait returns. 'pre': both arrays of Br / 8 float2 before their waits;
'pre1': only lse2 (Di's wait is shorter); 'pre0': only lse2's first two float2. D = 128 only (at D = 64, Br = 128, the arrays
took spills from 24 to 132 bytes). Applied to step 12 at ee2eca7.
ptxas (-Xptxas -v, the step's flags) on bwd_main<128>: spill stores 12 bytes in the step, 44 in
pre, 28 in pre1, 4 in pre0. Call 18: pre and pre1 2.8-4.1 % slower than the mean of the step's two
runs, pre0 1.1-1.8 % faster; pre0 became the step (5597c2a).
Usage: make_pre.py pre|pre1|pre0 OUT.cu [IN.cu]"""
import sys
kind, out = sys.argv[1], sys.argv[2]
src = sys.argv[3] if len(sys.argv) > 3 else "steps/12_backward_wgmma/attention.cu"
s = open(src).read()

def rep(old, new):
    global s
    assert s.count(old) == 1, old[:70]
    s = s.replace(old, new)

rep("""        wgmma_wait<1>();
        reg_fence(s);
        const bool mask""", """        float2 lv[SPLIT_N ? Br / 8 : 1];   /* at D = 128 only */
#pragma unroll
        for (int j = 0; j < (SPLIT_N ? Br / 8 : 0); j++)
            lv[j] = *reinterpret_cast<const float2 *>(L + 8 * j + 2 * t);
        wgmma_wait<1>();
        reg_fence(s);
        const bool mask""")
rep("""            const float2 l = *reinterpret_cast<const float2 *>(L + 8 * j + 2 * t);
""", """            const float2 l = SPLIT_N ? lv[SPLIT_N ? j : 0]
                                     : *reinterpret_cast<const float2 *>(L + 8 * j + 2 * t);
""")
if kind == "pre":
    rep("""        /* dS^T = P^T o (dP^T - Di) */
        wgmma_wait<0>();""", """        /* dS^T = P^T o (dP^T - Di) */
        float2 dv2[SPLIT_N ? Br / 8 : 1];
#pragma unroll
        for (int j = 0; j < (SPLIT_N ? Br / 8 : 0); j++)
            dv2[j] = *reinterpret_cast<const float2 *>(Dq + 8 * j + 2 * t);
        wgmma_wait<0>();""")
    rep("""            const float2 di = *reinterpret_cast<const float2 *>(Dq + 8 * j + 2 * t);
""", """            const float2 di = SPLIT_N ? dv2[SPLIT_N ? j : 0]
                                      : *reinterpret_cast<const float2 *>(Dq + 8 * j + 2 * t);
""")
if kind == "pre0":   # only the first two float2 of lse2 ahead of the wait: 4 registers
    s = s.replace("for (int j = 0; j < (SPLIT_N ? Br / 8 : 0); j++)\n            lv[j]",
                  "for (int j = 0; j < (SPLIT_N ? 2 : 0); j++)\n            lv[j]")
    s = s.replace("const float2 l = SPLIT_N ? lv[SPLIT_N ? j : 0]", "const float2 l = SPLIT_N && j < 2 ? lv[j < 2 ? j : 0]")
    assert "j < 2 ? lv" in s and "SPLIT_N ? 2 : 0" in s
open(out, "w").write(s)
