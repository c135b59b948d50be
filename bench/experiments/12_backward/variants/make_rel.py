#!/usr/bin/env python3
"""Variant "rel": a stage released by one thread per consumer warpgroup (2 arrivals, not 256),
after the warpgroup barrier that already opens the dQ staging: bar.sync orders every thread's
plain reads of lse2/Di before the arrival, an order racecheck follows (it did not follow the
__syncwarp + lane 0 arrival that call 2 tried). The release comes one dQ product later.
Apply to the output of make_rot.py:  make_rel.py OUT.cu IN.cu"""
import sys
s = open(sys.argv[2]).read()

def rep(old, new):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)

rep('''            mbar_init(empty + 8 * i, 2 * WG);   /* every consumer thread releases the stage */''',
    '''            mbar_init(empty + 8 * i, 2);   /* one thread per consumer warpgroup releases */''')
rep('''        mbar_arrive(empty + 8 * st);
''', '')
rep('''        if (tid % WG == 0)
            bulk_wait_read<0>();
        named_bar_sync(2 + wg, WG);
''', '''        if (tid % WG == 0)
            bulk_wait_read<0>();
        named_bar_sync(2 + wg, WG);   /* also: the warpgroup is done with the stage */
        if (tid % WG == 0)
            mbar_arrive(empty + 8 * st);
''')
open(sys.argv[1], "w").write(s)
