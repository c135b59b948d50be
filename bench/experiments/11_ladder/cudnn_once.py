#!/usr/bin/env python3
"""SDPA's cuDNN forward at B=4 H=8 N=4096 D=128 bf16 (non-causal, or causal with --causal), run a
few times so that Nsight Compute can profile one launch (ncu -k regex:cudnn --launch-skip 2 -c 1)."""
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

d = int(sys.argv[1]) if len(sys.argv) > 1 else 128
causal = "--causal" in sys.argv
q, k, v = (torch.randn(4, 8, 4096, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
print("sdpa_cudnn ran", tuple(o.shape), "causal" if causal else "non-causal")
