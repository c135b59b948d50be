#!/usr/bin/env python3
"""The load-balance model behind step 11's causal work order (notes/11).

One block per causal work tile; the hardware hands blocks to SMs in block order, each to the SM
that frees up first. A work tile of query tile i costs i + 1 key tiles plus a fixed start-up
(0.3 key tiles). The model prints, for B*H = 32 and the H200's 132 SMs and 60 MiB of L2, how close
three orders come to the ideal (every SM finishing at the same time): head by head (62ca8dd),
heaviest first across all heads, and heaviest first within sections of heads, as step 11 launches
them (as many heads as have their K and V in 2/3 of L2, then as even as one G allows), and
the same sections before that evening out. It counts key tiles only:
no masking cost, no L2 or DRAM effects, no clock changes.

    python3 bench/causal_balance.py
"""
import heapq

SMS, L2, BH, BR, STARTUP = 132, 60 << 20, 32, 128, 0.3


def makespan(costs):
    sms = [0.0] * SMS
    for c in costs:
        heapq.heappush(sms, heapq.heappop(sms) + c + STARTUP)
    return max(sms)


def order(tq, groups):
    """work tiles (their key-tile costs) heaviest first within each group of heads"""
    return [tq - i for g in groups for i in range(tq) for _ in range(g)]


def sections(n, d, even=True):
    g = max(1, min(BH, L2 * 2 // 3 // (n * d * 2 * 2)))
    if even:
        s = -(-BH // g)
        g = -(-BH // s)
    return [min(g, BH - k) for k in range(0, BH, g)]


print("N      D    heads/section  head by head  all heads  sections  (not evened out)")
for n in (2048, 4096, 8192, 16384):
    for d in (64, 128):
        tq = n // BR
        ideal = sum(order(tq, [BH])) / SMS + STARTUP * BH * tq / SMS
        sec = sections(n, d)
        raw = sections(n, d, even=False)
        print("%-6d %-4d %-14s %12.3f %10.3f %9.3f  %.3f (%s)" % (
            n, d, "+".join(map(str, sec)), ideal / makespan(order(tq, [1] * BH)),
            ideal / makespan(order(tq, [BH])), ideal / makespan(order(tq, sec)),
            ideal / makespan(order(tq, raw)), "+".join(map(str, raw))))
