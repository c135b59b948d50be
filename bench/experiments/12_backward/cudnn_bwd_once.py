#!/usr/bin/env python3
"""SDPA's cuDNN forward and backward at B=4 H=8 N=4096 bf16 (D = argv[1], default 128; --causal),
a few times, so that Nsight Compute can profile one backward launch (ncu -k regex:bprop ...)."""
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

d = int(sys.argv[1]) if len(sys.argv) > 1 else 128
causal = "--causal" in sys.argv
q, k, v = (torch.randn(4, 8, 4096, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
           for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        o.backward(torch.ones_like(o))
torch.cuda.synchronize()
print("sdpa_cudnn forward+backward ran", tuple(o.shape), "causal" if causal else "non-causal")
