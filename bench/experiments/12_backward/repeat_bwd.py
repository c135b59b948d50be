#!/usr/bin/env python3
"""Is step 12's backward bitwise repeatable? The same inputs, the backward run 5 times through the
Python door (step 12's forward and backward); dK and dV compared bitwise with the first run, dQ
by its largest difference and how many elements differ. Usage: repeat_bwd.py (repo root, GPU)."""
import sys
import torch
sys.path.insert(0, "python")
import flash_steps as fs

for (B, H, N, D, causal) in [(4, 8, 4096, 128, False), (4, 8, 4096, 64, True),
                             (2, 4, 1000, 128, True)]:
    g = torch.Generator(device="cuda").manual_seed(7)
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda", generator=g, dtype=torch.bfloat16)
                   for _ in range(4))
    runs = []
    for r in range(5):
        qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
        o = fs.attention(qq, kk, vv, causal=causal, step=12, backward_step=12)
        o.backward(do)
        runs.append((qq.grad, kk.grad, vv.grad))
    dq0, dk0, dv0 = runs[0]
    for r, (dq, dk, dv) in enumerate(runs[1:], 1):
        diff = (dq.float() - dq0.float()).abs()
        print(f"B={B} H={H} N={N} D={D} causal={int(causal)} run {r} vs run 0: "
              f"dK identical {torch.equal(dk, dk0)}, dV identical {torch.equal(dv, dv0)}, "
              f"dQ elements differing {int((dq != dq0).sum())} of {dq.numel()}, "
              f"max |diff| {diff.max().item():.3e} (max |dQ| {dq0.float().abs().max().item():.3e})")
