#!/usr/bin/env python3
"""FlashAttention-4's forward at one shape, for Nsight Compute: three calls (the first compiles).
Usage: ncu_fa4.py B H N D causal"""
import sys
import torch
from flash_attn.cute.interface import flash_attn_func

b, h, n, d, causal = (int(x) for x in sys.argv[1:6])
q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(3):
    flash_attn_func(q, k, v, causal=bool(causal))
torch.cuda.synchronize()
