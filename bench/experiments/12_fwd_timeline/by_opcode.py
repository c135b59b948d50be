#!/usr/bin/env python3
"""by_opcode: one kernel's main loop beside another's, from Nsight Compute's SASS source pages
(ncu --page source --csv --print-source sass): the loop's trips (the most any HGMMA ran), the
warp samples of the instructions that ran that often (the unmasked path), and per opcode the
instructions a trip, the samples per trip and the 'wait' (fixed-latency dependency) samples per
trip. Both kernels take 128 keys a trip at D = 64, so per trip is per key tile (the backward's
trip is a query tile: ../13_bwd_fa4_lines).
    python3 by_opcode.py step12.csv.gz fa4.csv.gz [NAME_A NAME_B]   (names: step12 fa4)"""
import csv,gzip,collections,sys
def load(path):
    rows=list(csv.reader(gzip.open(path,'rt')))
    hdr,data=rows[1],[r for r in rows[2:] if len(r)>=len(rows[1])]
    ix={h:i for i,h in enumerate(hdr)}
    num=lambda r,c: int(r[ix[c]]) if r[ix[c]].isdigit() else 0
    rs=[h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    out=[]
    for r in data:
        src=r[ix['Source']].strip(); t=src.split(); op=(t[1] if t[0].startswith('@') else t[0]).split('.')[0]
        out.append((num(r,'Warp Stall Sampling (All Samples)'),num(r,'Instructions Executed'),op,{c[6:]:num(r,c) for c in rs},src))
    return out
res={}
names=sys.argv[3:5] if len(sys.argv)>4 else ['step12','fa4']
for name,path in zip(names,sys.argv[1:3]):
    d=load(path)
    cnt=collections.Counter(e for _,e,_,_,_ in d if e>0)
    # loop count: the execution count shared by the most instructions among counts > max/4
    mx=max(cnt)
    trips=max(e for _,e,op,_,_ in d if op=='HGMMA')
    tot=sum(s for s,_,_,_,_ in d)
    loop=[x for x in d if x[1]==trips]
    ls=sum(x[0] for x in loop)
    ops=collections.Counter(); n=collections.Counter(); wt=collections.Counter()
    for s,e,op,st,src in loop:
        ops[op]+=s; n[op]+=1; wt[op]+=st.get('wait',0)
    res[name]=(trips,tot,ls,ops,n,wt)
    print(f"{name}: trips {trips}, samples {tot}, in the unmasked loop path {ls} ({100*ls/tot:.0f} %), {len(loop)} instructions a trip, per trip {ls/trips:.4f}")
a,b=res[names[0]],res[names[1]]
print(f"loop per trip {names[0]}/{names[1]} {a[2]/a[0]/(b[2]/b[0]):.3f}; whole kernel {a[1]/b[1]:.3f}")
print(f"{'op':10s} {'n A':>4s} {'n B':>4s} {'samples/trip A':>16s} {'B':>8s} {'wait A':>8s} {'B':>8s}   (A {names[0]}, B {names[1]})")
for op in sorted(set(a[3])|set(b[3]), key=lambda o:-(a[3][o]/a[0]+b[3][o]/b[0])):
    print(f"{op:10s} {a[4][op]:4d} {b[4][op]:4d} {a[3][op]/a[0]:16.4f} {b[3][op]/b[0]:8.4f} {a[5][op]/a[0]:8.4f} {b[5][op]/b[0]:8.4f}")
