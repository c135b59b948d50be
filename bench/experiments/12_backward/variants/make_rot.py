#!/usr/bin/env python3
"""Variant "rot": step 12 with the loop rotated by one product. S^T of query tile i+1 is issued
as soon as dV, dK of tile i are done (their register operands P^T, dS^T are then dead), behind
tile i's dQ; dP^T stays at the top of the loop. Only S^T's 32 registers overlap dQ's, where the
"pipe" variant (S^T and dP^T) needed 64 and spilled at D = 128.
Writes OUT.cu from IN.cu (default steps/12_backward_wgmma/attention.cu):  make_rot.py OUT.cu [IN.cu]"""
import sys
src = sys.argv[2] if len(sys.argv) > 2 else "steps/12_backward_wgmma/attention.cu"
s = open(src).read()

def rep(old, new):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)

rep('''    if (n_iter > 0)
        mbar_wait(bar_kv, 0);
''', '''    if (n_iter > 0) {   /* S^T of the first tile; each later tile's goes in behind the last dQ */
        mbar_wait(bar_kv, 0);
        mbar_wait(full, 0);
        wgmma_fence();
        issue_qk<D, Br, Bc>(s, k_wg, sQ);
        wgmma_commit();
    }
''')
rep('''        mbar_wait(full + 8 * st, (i / BWD_STAGES) & 1);

        /* S^T = K_wg Q^T and dP^T = V_wg dO^T: two groups, m64n64k16, all operands K-major */
        wgmma_fence();
        issue_qk<D, Br, Bc>(s, k_wg, q_st);
        wgmma_commit();
        issue_qk<D, Br, Bc>(dp, v_wg, do_st);
''', '''        /* S^T = K_wg Q^T is in flight (issued at the end of the last tile); dP^T = V_wg dO^T */
        reg_fence(dp);
        wgmma_fence();
        issue_qk<D, Br, Bc>(dp, v_wg, do_st);
''')
rep('''        mbar_arrive(empty + 8 * st);
        wgmma_wait<0>();
''', '''        mbar_arrive(empty + 8 * st);
        {   /* the next tile's S^T goes in behind this tile's dQ: every tile, the last one's
             * on a stale stage and thrown away (a wgmma under a branch serializes them all) */
            const int sn = (i + 1) % BWD_STAGES;
            if (i + 1 < n_iter)
                mbar_wait(full + 8 * sn, ((i + 1) / BWD_STAGES) & 1);
            reg_fence(s);
            wgmma_fence();
            issue_qk<D, Br, Bc>(s, k_wg, sQ + sn * QT);
            wgmma_commit();
            wgmma_wait<1>();
        }
''')
rep('''    if (tid % WG == 0)
        bulk_wait<0>();   /* the last adds are done before the block's shared memory goes */''',
'''    wgmma_wait<0>();   /* the last tile's extra S^T */
    if (tid % WG == 0)
        bulk_wait<0>();   /* the last adds are done before the block's shared memory goes */''')
open(sys.argv[1], "w").write(s)
