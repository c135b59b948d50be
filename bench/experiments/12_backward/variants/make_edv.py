"""Call 17 (5.1-6.2 % slower at D = 128; spills 12 -> 48 bytes). Step 12 (ee2eca7) at D = 128 with dV
issued as soon as P^T is packed, before the wait for dP^T: dS^T's arithmetic then runs while the
tensor cores do dV, where in the step they wait for it (both warpgroups compute dS^T at once,
between dP^T's end and dV's issue). Groups at D = 128: S^T, dP^T, dV (wait<1>: S^T, dP^T done),
then dQ, dK as in the step. D = 64 unchanged.
Usage: make_edv.py OUT.cu [IN.cu]"""
import sys
out = sys.argv[1]
src = sys.argv[2] if len(sys.argv) > 2 else "steps/12_backward_wgmma/attention.cu"
s = open(src).read()

def rep(old, new):
    global s
    assert s.count(old) == 1, old[:70]
    s = s.replace(old, new)

rep("""        /* dS^T = P^T o (dP^T - Di) */
        wgmma_wait<0>();
        reg_fence(dp);
""", """        if (SPLIT_N) {   /* dV += P^T dO now, queued behind dP^T */
#pragma unroll
            for (int x = 0; x < Br / 4; x++)
                pa[x] = pack_bf16(s[2 * x], s[2 * x + 1]);
            reg_fence(dv);
            reg_fence(pa);
            wgmma_fence();
            issue_pv<D, Br>(dv, pa, do_st);
            wgmma_commit();
        }
        /* dS^T = P^T o (dP^T - Di) */
        wgmma_wait<SPLIT_N ? 1 : 0>();
        reg_fence(dp);
""")
rep("""        for (int x = 0; x < Br / 4; x++) {
            pa[x] = pack_bf16(s[2 * x], s[2 * x + 1]);
            dsa[x] = pack_bf16(dp[2 * x], dp[2 * x + 1]);
        }
""", """        for (int x = 0; x < Br / 4; x++) {
            if (!SPLIT_N)
                pa[x] = pack_bf16(s[2 * x], s[2 * x + 1]);
            dsa[x] = pack_bf16(dp[2 * x], dp[2 * x + 1]);
        }
""")
rep("""        reg_fence(dv);
        reg_fence(dk);
        reg_fence(pa);
        reg_fence(dsa);
        wgmma_fence();
        issue_pv<D, Br>(dv, pa, do_st);
        if (!SPLIT_N)
            issue_pv<D, Br>(dk, dsa, q_st);
        wgmma_commit();
""", """        if (!SPLIT_N) {
            reg_fence(dv);
            reg_fence(dk);
            reg_fence(pa);
            reg_fence(dsa);
            wgmma_fence();
            issue_pv<D, Br>(dv, pa, do_st);
            issue_pv<D, Br>(dk, dsa, q_st);
            wgmma_commit();
        }
""")
open(out, "w").write(s)
