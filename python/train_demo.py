#!/usr/bin/env python3
"""A step of the series inside a training loop: forward, backward, optimizer step.

    python3 python/train_demo.py [--step N] [--steps 100] [--sdpa] [--device cuda]

A one-layer causal attention model learns to copy: each sequence is 64 random tokens followed by
the same 64 again, and the loss is next-token cross-entropy on the second half, where the answer
is the token 63 places back. Chance is ln(vocab) = 4.16; only attention can do better, so a loss
that goes down means the forward and the backward of the step both work. The attention call is
flash_steps.attention (bf16 q, k, v; the default step is the fastest that supports the problem on
this GPU, --step picks one). Its backward is flash_steps' choice: the step's own if it has one,
else the fastest built backward that supports the problem (step 14 on Hopper, 06 elsewhere,
step 00's materialized one only when no other can); --backward-step picks one. The first line printed names both.
--sdpa swaps in torch's scaled_dot_product_attention to compare (and runs without a GPU with
--device cpu). Prints the loss per step, and the time per step. Exit status 1 if the mean loss of
the last 10 steps is not below 0.8 x that of the first 10; 2 without torch or a GPU.
"""
import argparse
import math
import sys
import time
from pathlib import Path

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    if __name__ == "__main__":
        print("train_demo: needs PyTorch (%s); pip install torch, then run it again" % e)
        sys.exit(2)
    raise

sys.path.insert(0, str(Path(__file__).resolve().parent))


class CopyModel(torch.nn.Module):
    def __init__(self, vocab, seq, heads, head_dim, attend):
        super().__init__()
        d = heads * head_dim
        self.heads, self.head_dim, self.attend = heads, head_dim, attend
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(seq, d) * 0.5)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, x):
        B, N = x.shape
        h = self.tok(x) + self.pos[:N]
        q, k, v = self.qkv(h).view(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        # bf16 into the kernel (the tensor-core steps take bf16 only), fp32 around it
        a = self.attend(q.bfloat16(), k.bfloat16(), v.bfloat16()).float()
        a = a.transpose(1, 2).reshape(B, N, -1)
        return self.head(h + self.out(a))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--step", default=None, help="step number or name (default: the fastest)")
    ap.add_argument("--backward-step", default=None,
                    help="step whose backward runs (default: the step's own, else the fastest "
                         "built backward that supports the problem)")
    ap.add_argument("--sdpa", action="store_true", help="torch SDPA instead of a step")
    ap.add_argument("--steps", type=int, default=100, help="optimizer steps")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--half", type=int, default=64, help="length of the part to copy")
    ap.add_argument("--vocab", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args()
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("train_demo: no CUDA GPU here (torch.cuda.is_available() is False); "
              "--sdpa --device cpu runs the same loop without one")
        return 2
    torch.manual_seed(0)
    seq = 2 * args.half

    if args.sdpa:
        name = "torch SDPA"

        def attend(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        import flash_steps as fs
        probe = torch.zeros(args.batch, args.heads, seq - 1, args.head_dim, dtype=torch.bfloat16,
                            device=dev)
        step = fs.load(args.step) if args.step is not None else fs.choose(probe, probe, probe, True)
        bstep = (fs.load(args.backward_step) if args.backward_step is not None else
                 fs.choose_backward(probe, probe, probe, True, step=step))
        name = "%s (backward: %s)" % (step.name, bstep.name)

        def attend(q, k, v):
            return fs.attention(q, k, v, causal=True, step=step, backward_step=bstep)

    model = CopyModel(args.vocab, seq, args.heads, args.head_dim, attend).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    print("attention: %s; B=%d H=%d N=%d D=%d bf16 causal; vocab %d, chance loss %.3f"
          % (name, args.batch, args.heads, seq, args.head_dim, args.vocab, math.log(args.vocab)))
    losses = []
    for it in range(args.steps):
        t0 = time.perf_counter()
        first = torch.randint(0, args.vocab, (args.batch, args.half), device=dev)
        x = torch.cat([first, first], dim=1)
        logits = model(x[:, :-1])
        # predict tokens half..2*half-1 from the positions before them
        target = x[:, args.half:]
        loss = F.cross_entropy(logits[:, args.half - 1:].reshape(-1, args.vocab), target.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        val = loss.item()   # synchronizes, so the time below is the whole step
        ms = (time.perf_counter() - t0) * 1e3
        losses.append(val)
        print("step %4d  loss %.4f  %.1f ms" % (it, val, ms), flush=True)
        if not math.isfinite(val):
            print("train_demo: the loss is not finite")
            return 1
    n = min(10, len(losses) // 2) or 1
    start, end = sum(losses[:n]) / n, sum(losses[-n:]) / n
    ok = end < 0.8 * start
    print("mean loss of the first %d steps %.4f, of the last %d %.4f: %s"
          % (n, start, n, end, "went down" if ok else "DID NOT GO DOWN"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
