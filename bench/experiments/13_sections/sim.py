#!/usr/bin/env python3
"""sim.py: step 13's causal backward blocks in the order bwd_block launches them (sections of hps
heads, key tile 0 of each head of a section first), each taking the SM that frees first, every
query tile the same cost and a block's ends two tiles more; prints the makespan over the
perfect one (total / SMs) per heads-per-section, and the step's choice (bwd_heads_per_section).
No L2 in it: what it says is the order's tail alone. usage: python3 sim.py"""
import heapq
def sim(N, D, hps, bh=32, sms=132, over=2.0, causal=True):
    Br = (80 if N >= 8192 else 64) if D == 128 else 128; Bc = 128   # bwd_wide(): causal 80 rows from Nq = 8192
    n_qt=(N+Br-1)//Br; n_kt=(N+Bc-1)//Bc
    order=[]
    if causal:
        nsec=(bh+hps-1)//hps
        for sec in range(nsec):
            h=min(hps,bh-sec*hps)
            for r in range(h*n_kt):
                kt=r//h; order.append(n_qt-min(kt*Bc//Br,n_qt)+over)
    else:
        order=[n_qt+over]*(n_kt*bh)
    free=[0.0]*sms; heapq.heapify(free)
    for w in order:
        t=heapq.heappop(free); heapq.heappush(free,t+w)
    mk=max(free); tot=sum(order)
    return mk/(tot/sms)
def heur(N,D,bh=32,sms=132):
    Br = (80 if N >= 8192 else 64) if D == 128 else 128; Bc = 128   # bwd_wide(): causal 80 rows from Nq = 8192
    n_mt=(N+Br-1)//Br; n_kt=(N+Bc-1)//Bc
    tiles=sum(n_mt-min(kt*Bc//Br,n_mt) for kt in range(n_kt))
    n=tiles*bh//(sms*n_mt)-1
    return (bh+n-1)//n if n>1 else bh
for N,D in [(16384,128),(16384,64),(8192,128),(4096,128),(4096,64)]:
    print(N,D,'heur hps',heur(N,D),' '.join(f'h{h}:{sim(N,D,h):.3f}' for h in [1,2,3,4,6,8,11,32]), 'noncausal %.3f'%sim(N,D,32,causal=False))
