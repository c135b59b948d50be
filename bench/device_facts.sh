#!/usr/bin/env bash
# The GPU's own ceilings, measured, for the notes to cite: clocks (nvidia-smi), device-to-device
# copy bandwidth and a large bf16 GEMM (PyTorch, CUDA events, median of 20 after warm-up).
#   bench/device_facts.sh > bench/results/<gpu>/device.txt
set -uo pipefail
q() { nvidia-smi --query-gpu="$1" --format=csv,noheader,nounits 2>/dev/null | head -1 | tr -d ' '; }
echo "gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
echo "sm_clock_max_mhz=$(q clocks.max.sm)"
echo "sm_clock_now_mhz=$(q clocks.sm)"
echo "mem_clock_max_mhz=$(q clocks.max.mem)"
echo "power_limit_w=$(q power.limit)"
python3 - <<'PY'
import torch
def med(fn, n=20):
    for _ in range(3): fn()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2] / 1e3
n = 1 << 30                                  # 1 GiB each way
src = torch.empty(n, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
t = med(lambda: dst.copy_(src))
print(f"copy_bandwidth_tbs={2 * n / t / 1e12:.2f}   # bytes read + written per second, 1 GiB copy")
m = 8192
a = torch.randn(m, m, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
t = med(lambda: a @ b)
print(f"bf16_gemm_8192_tflops={2 * m ** 3 / t / 1e12:.0f}")
PY
