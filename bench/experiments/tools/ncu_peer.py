#!/usr/bin/env python3
"""ncu_peer: one peer call (SDPA with one backend forced, or FlashAttention-4) for Nsight Compute.

    ncu --profile-from-start off ... python3 bench/experiments/tools/ncu_peer.py BACKEND PASS SHAPE [causal]

BACKEND cudnn|flash|fa4, PASS fwd|bwd, SHAPE B,H,Nq,Nk,D[,H_kv] as bench/sweeps.txt writes it.
Two warm-up calls (FlashAttention-4 compiles in the first), then one call between
cudaProfilerStart and cudaProfilerStop: with --profile-from-start off, ncu sees that call's
kernels alone (the backward: its preprocess, main and dQ kernels; not the forward it needs).
"""
import sys

import torch
import torch.nn.functional as F

backend, pas, shape = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split(",")]
causal = len(sys.argv) > 4 and sys.argv[4] == "causal"
b, h, nq, nk, d = shape[:5]
hkv = shape[5] if len(shape) > 5 else h
dt = torch.bfloat16
if backend == "fa4":
    from flash_attn.cute.interface import flash_attn_func   # [B, N, H, D]
    q = torch.randn(b, nq, h, d, device="cuda", dtype=dt, requires_grad=pas == "bwd")
    k = torch.randn(b, nk, hkv, d, device="cuda", dtype=dt, requires_grad=pas == "bwd")
    v = torch.randn(b, nk, hkv, d, device="cuda", dtype=dt, requires_grad=pas == "bwd")
    fwd = lambda: flash_attn_func(q, k, v, causal=causal)[0]
else:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    kind = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[backend]
    q = torch.randn(b, h, nq, d, device="cuda", dtype=dt, requires_grad=pas == "bwd")
    k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dt, requires_grad=pas == "bwd")
    v = torch.randn(b, hkv, nk, d, device="cuda", dtype=dt, requires_grad=pas == "bwd")

    def fwd():
        with sdpa_kernel([kind]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hkv < h)
out = fwd()
d_o = torch.randn_like(out)


def call():
    if pas == "fwd":
        return fwd()
    return torch.autograd.grad(out, (q, k, v), d_o, retain_graph=True)


for _ in range(2):
    call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print(f"ncu_peer: {backend} {pas} {sys.argv[3]}{' causal' if causal else ''}: profiled one call")
