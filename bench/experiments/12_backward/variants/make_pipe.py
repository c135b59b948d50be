#!/usr/bin/env python3
"""Variant "pipe": step 12 with S^T and dP^T of query tile i+1 issued as soon as dV, dK of tile i
are done, before tile i's dQ piece is waited for and staged: the tensor cores run the next tile's
first two products while the warpgroup stages dQ and goes through its barriers.
Writes OUT.cu from IN.cu (default steps/12_backward_wgmma/attention.cu):  make_pipe.py OUT.cu [IN.cu]"""
import sys
src = sys.argv[2] if len(sys.argv) > 2 else "steps/12_backward_wgmma/attention.cu"
s = open(src).read()

def rep(old, new):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)

rep('''    if (n_iter > 0)
        mbar_wait(bar_kv, 0);
''', '''    if (n_iter > 0) {   /* S^T and dP^T of the first tile; each later tile's at the end of the last */
        mbar_wait(bar_kv, 0);
        mbar_wait(full, 0);
        wgmma_fence();
        issue_qk<D, Br, Bc>(s, k_wg, sQ);
        wgmma_commit();
        issue_qk<D, Br, Bc>(dp, v_wg, sdO);
        wgmma_commit();
    }
''')
rep('''        mbar_wait(full + 8 * st, (i / BWD_STAGES) & 1);

        /* S^T = K_wg Q^T and dP^T = V_wg dO^T: two groups, m64n64k16, all operands K-major */
        wgmma_fence();
        issue_qk<D, Br, Bc>(s, k_wg, q_st);
        wgmma_commit();
        issue_qk<D, Br, Bc>(dp, v_wg, do_st);
        wgmma_commit();
''', '')
rep('''        if (lane == 0)
            mbar_arrive(empty + 8 * st);
        wgmma_wait<0>();
        reg_fence(dq);
''', '''        if (lane == 0)
            mbar_arrive(empty + 8 * st);
        if (i + 1 < n_iter) {   /* the next tile's S^T, dP^T go in behind this tile's dQ */
            const int sn = (i + 1) % BWD_STAGES;
            mbar_wait(full + 8 * sn, ((i + 1) / BWD_STAGES) & 1);
            reg_fence(s);
            reg_fence(dp);
            wgmma_fence();
            issue_qk<D, Br, Bc>(s, k_wg, sQ + sn * QT);
            wgmma_commit();
            issue_qk<D, Br, Bc>(dp, v_wg, sdO + sn * QT);
            wgmma_commit();
            wgmma_wait<2>();
        } else {
            wgmma_wait<0>();
        }
        reg_fence(dq);
''')
open(sys.argv[1], "w").write(s)
