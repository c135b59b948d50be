#!/usr/bin/env bash
# FlashAttention-4's sm90 forward kernels as compiled on the H200, kept for reading here: its CuTe
# DSL writes the PTX and cubin of every kernel it compiles when CUTE_DSL_KEEP names them (not
# "sass": that needs nvdisasm >= 13.4, the H200 machine has 13.0; pip's nvidia-cuda-nvdisasm 13.5
# here disassembles the cubins). Forward, B = 4, H = 8, N = 4096, not causal, D = 128 and 64.
# usage (on the H200, FlashAttention-4 installed, from the repository root):
#   bash bench/experiments/12_fa4_sass/dump.sh OUT      -> OUT/fa4_dump.tar.xz
# here: tar xJf fa4_dump.tar.xz, then cuobjdump -sass (13.5) on fa4dump/d128/*.cubin
set -u
o=${1:?usage: dump.sh OUT}; mkdir -p "$o"
cat >/tmp/fa4_run.py <<'PY'
import sys, torch
from flash_attn.cute.interface import flash_attn_func
b, h, n, d, causal = (int(x) for x in sys.argv[1:6])
q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(3):
    flash_attn_func(q, k, v, causal=bool(causal))
torch.cuda.synchronize()
print("fa4_run: ran", sys.argv[1:6])
PY
for d in 128 64; do
    mkdir -p /tmp/fa4dump/d$d
    CUTE_DSL_KEEP=ptx,cubin CUTE_DSL_DUMP_DIR=/tmp/fa4dump/d$d timeout 150 \
        python3 /tmp/fa4_run.py 4 8 4096 $d 0 2>&1 | grep -vE "UserWarning|exe_args" | tail -3
    ls -la /tmp/fa4dump/d$d
done
tar cJf "$o/fa4_dump.tar.xz" -C /tmp fa4dump
