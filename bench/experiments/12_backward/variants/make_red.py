#!/usr/bin/env python3
"""Variant "red": step 12 with dQ's pieces added straight from registers by red.global.add.v4.f32
(fire and forget, 8 per thread per query tile, coalesced: the accumulator is in fragment order)
instead of staged in shared memory and added by one cp.reduce.async.bulk per warpgroup.
Writes OUT.cu from steps/12_backward_wgmma/attention.cu:  make_red.py OUT.cu"""
import sys
s = open("steps/12_backward_wgmma/attention.cu").read()
a = s.index("        /* The piece to this warpgroup's staging in fragment order")
b = s.index("    /* dK = scale dS^T Q, dV: plain stores of the rows that exist */")
new = '''        {
            const int piece = SPLIT_N ? wg : 0;
            float *dst = dq_acc + (((size_t)bh * n_mt + m) * (D / 64) + piece) * BWD_DQ_FLOATS +
                         (tid % WG) * 4;
#pragma unroll
            for (int x = 0; x < BWD_DQ_FLOATS / WG / 4; x++)
                asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\\n" ::"l"(dst + x * WG * 4),
                             "f"(dq[4 * x]), "f"(dq[4 * x + 1]), "f"(dq[4 * x + 2]), "f"(dq[4 * x + 3])
                             : "memory");
        }
    }

'''
s = s[:a] + new + s[b:]
open(sys.argv[1], "w").write(s)
