"""flash_steps: any step of the series, called from PyTorch through ctypes.

    import flash_steps                      # python/ on sys.path (or PYTHONPATH=python)
    o = flash_steps.sdpa(q, k, v, is_causal=True)              # F.scaled_dot_product_attention's call
    o = flash_steps.sdpa(q, k, v, enable_gqa=True)             # k, v with H_kv heads, H_kv | H
    o = flash_steps.attention(q, k, v, causal=True)            # the first door: (B, N, D) too, step=
    o = flash_steps.FlashAttention.apply(q, k, v, True)        # the autograd.Function itself
    torch.compile(model, fullgraph=True)    # a model calling flash_steps.sdpa: no graph break

It loads the same build/steps/NN_name.so files as the C tools (build them with `make`; no C++
extension, no other build step) and talks to each through its `attn_step_info`, the struct of
common/attention.h, mirrored below field by field. Nothing here computes attention itself.

What goes in: q (B, H, Nq, D), k and v (B, H, Nk, D) (or (B, H_kv, Nk, D): grouped-query, below),
CUDA tensors of one device, all bf16 or all fp32, or the same without the head axis, (B, N, D)
(not through sdpa). What comes out: O shaped like q, and with
return_lse=True also lse, float32 (B, H, Nq) (or (B, Nq)), the natural-log logsumexp of each
row's scaled, masked scores. Causal is top-left (query i sees keys j <= i), as SDPA's is_causal.

Grouped-query attention: with enable_gqa=True (sdpa's and attention()'s keyword, as in
F.scaled_dot_product_attention), k and v may have H_kv heads where q has H, H a multiple of H_kv
(multi-query: H_kv = 1); query head h reads K/V head h / (H / H_kv), and dk, dv come back with H_kv
heads, summed over each group by the step itself. The problem's heads_kv is k's head count. Steps
00 and 14 take it, and step 15 forward for Nq <= 16; every other step's supports() refuses it, so
the choice below passes over them as over any problem they cannot do (on a Hopper GPU: step 14
both ways for bf16 at D = 64 or 128; elsewhere, and for fp32 or other head dims, step 00). H not a multiple of H_kv is a ValueError,
and so is H_kv != H without enable_gqa=True.

sdpa(query, key, value, is_causal=False, scale=None, enable_gqa=False) is SDPA's call on (B, H, N,
D) tensors (keyword-only extras: step=, backward_step=, deterministic=; attn_mask and dropout_p
only as None and 0.0). It calls flash_steps::attention_fwd, a torch.library.custom_op returning
(O, lse), whose registered autograd formula (setup_context saves q, k, v, O, lse) calls the
custom op flash_steps::attention_bwd, returning (dq, dk, dv); each has a fake kernel that gives
the outputs' shapes and dtypes from the inputs' alone (O like q, contiguous; lse float32 (B, H,
Nq); dq, dk, dv like q, k, v), so that torch.compile(model, fullgraph=True) traces a model that
calls sdpa() as one graph (tests/test_torch.py checks that, and runs torch.library.opcheck on both
ops). The step is chosen inside the real kernels, at run time, by the rule below, never in the
traced code: the fake kernels need no GPU call, and what a step's choice depends on (the GPU, the
free memory for step 00) is read when the op runs. The ops take tensors and plain scalars only:
the step as a string ("" for the door's choice, else a number or a name). Called directly, the
ops take any H_kv that divides H (enable_gqa is sdpa's gate, as SDPA's). Inside
torch.compile(fullgraph=True) sdpa's input checks run while Dynamo traces: a bad input is then
Dynamo's error (torch._dynamo.exc.Unsupported), whose message carries the ValueError's.
attention() stays on the autograd.Function FlashAttention (it also takes (B, N, D) inputs and
saves L as the course expects); both run the same steps.

Layout and alignment: the contract wants contiguous (B, H, N, D) tensors whose data pointers are
16-byte aligned (a step returns ATTN_ERR_INVALID otherwise). Any other strides are made contiguous,
and a tensor whose data_ptr() % 16 != 0 (a view such as buf[1:].view(B, H, N, D)) is copied to a
fresh, aligned one before the step sees it; the same for the gradient dO. This door copies rather
than refuses: the copy costs one read and one write of that tensor, and never changes the result.

Which step runs (step=None): the fastest built step that can do the problem, by this rule. The
candidates are the built steps whose compute-capability bounds (cc_min, cc_max) fit this GPU, whose
supports() accepts the problem, and that have no known bug on it. Each step of the series adds one
idea meant to make it faster than the steps before, so the highest-numbered candidate is taken,
with two exceptions. First, 01 and 02, the scalar lessons, are slower than 00's cuBLAS products (02 took
476 us where 00 took 63 at fp32 1024 x 4096 x 64 on an H200, bench/results/h200/single_head.csv),
so when the choice falls to them (fp32, or a head dim the tensor-core steps do not take), step 00 is
taken instead if it can do the problem and its workspace (the N x N scores, forward or backward,
whichever is larger) fits in the GPU's free memory; else the lesson runs, since it needs none.
Second, step 14 adds grouped-query attention to step 13, and without groups its backward is 5 %
slower than step 13's (notes/14_gqa.md), so a multi-head problem goes to step 13, both ways, where
step 13 is built and takes it (_defers_to); step 14 takes the grouped ones. The
measurements are in the README's table. Decode (Nq <= 16 queries, bf16, D = 64 or 128, any
H_kv) on a Hopper GPU: step 15, the highest-numbered step, takes the forward and nothing else (it refuses more
queries and every backward, saying so), so the same rule gives decode problems to step 15 and the
rest to the step below it; a decode forward that needs gradients is differentiated by the backward
step chosen below. Override with step=N, a name ("02_ragged_mask"), or a Step from load();
available() lists what is built.

Which backward runs (backward_step=None): the step's own when it has one that supports the
problem (06 has one; 00 too, so step=0 stays the materialized baseline both ways). For a
forward-only step (most of them, the fastest forwards included): the highest-numbered built step
that has a backward, fits this GPU and supports the problem, the fastest backward by the same
construction of the series, with the same exception. That is step 14 on a Hopper GPU for
grouped-query problems, step 13 for multi-head ones, and step 06 elsewhere (a later backward step once it is built), and step 00's materialized backward only when no other can do
the problem (today: fp32, or a head dim other than 64 and 128). It is fed with the forward step's O and lse: the contract
fixes what lse means, so any forward pairs with any backward. choose_backward() says which it is;
backward_step=N picks one. Every call is queued on PyTorch's current CUDA stream of the inputs'
device, and the workspace comes from PyTorch's caching allocator on that stream.

Without PyTorch the module still imports: available(), load() and the listing below need only
ctypes; attention(), sdpa(), choose(), choose_backward() and FlashAttention.apply raise one
ImportError that says so (and no custom op is registered).

Errors: FileNotFoundError when build/steps (or the step's .so) is missing (it says to run make);
ValueError for an unknown step, a .so that does not follow common/attention.h, wrong device,
dtype (fp16 included) or shape, and anything a step refuses, quoting the step's own `why`;
OSError when the dynamic loader cannot load a .so (libcudart, libcublas not found); MemoryError
or torch.cuda.OutOfMemoryError when the workspace does not fit; RuntimeError when a CUDA call
inside a step fails. A step with a known bug on the problem (step 01 when Nk % 16 != 0) runs
only when asked for by name, with a RuntimeWarning that quotes the bug.

What it is not: no dropout, no attention mask other than causal, no fp16, grouped-query attention
only by steps 00, 14 and 15 (the others refuse it), no double backward (flash_steps::attention_bwd has
no autograd formula), no gradient through lse (it is marked non-differentiable).

`python3 python/flash_steps.py` lists the built steps and what each needs (no torch needed).

FLASH_STEPS_POISON=1 in the environment (the tests set it) fills every output and workspace with
NaN before a step runs, as `attn check` does, so an element a step never writes shows as NaN
instead of whatever the caching allocator's block held before.
"""
import ctypes
import math
import os
import re
import warnings
from pathlib import Path

try:
    import torch
except ImportError as _e:   # the ctypes half (listing, loading) works without it
    torch = None
    _NO_TORCH = ("flash_steps: PyTorch is not installed (%s): without it flash_steps only lists "
                 "and loads steps (python3 python/flash_steps.py); attention() needs torch with "
                 "CUDA (pip install torch)" % _e)

__all__ = ["attention", "sdpa", "FlashAttention", "load", "available", "choose", "choose_backward",
           "Step", "steps_dir"]


def _need_torch():
    if torch is None:
        raise ImportError(_NO_TORCH)

# ------------------------------------------------------------------ common/attention.h, mirrored

ATTN_FP32, ATTN_BF16 = 0, 1                       # attn_dtype (an enum: int-sized)
ATTN_OK, ATTN_ERR_INVALID, ATTN_ERR_UNSUPPORTED, ATTN_ERR_NO_MEMORY, ATTN_ERR_CUDA = range(5)
STATUS_NAMES = ("ATTN_OK", "ATTN_ERR_INVALID", "ATTN_ERR_UNSUPPORTED", "ATTN_ERR_NO_MEMORY",
                "ATTN_ERR_CUDA")
INT_MAX = 2**31 - 1


class Problem(ctypes.Structure):
    """attn_problem."""
    _fields_ = [("batch", ctypes.c_int), ("heads", ctypes.c_int),
                ("seq_q", ctypes.c_int), ("seq_k", ctypes.c_int),
                ("head_dim", ctypes.c_int), ("causal", ctypes.c_int),
                ("dtype", ctypes.c_int),          # attn_dtype
                ("scale", ctypes.c_float),
                ("heads_kv", ctypes.c_int),       # H_kv (0: H); this door passes k's heads
                ("deterministic", ctypes.c_int)]  # 1: a bitwise-repeatable backward

    def __repr__(self):
        kv = self.heads_kv if self.heads_kv else self.heads
        return ("B=%d H=%d%s Nq=%d Nk=%d D=%d %s%s scale=%g%s" %
                (self.batch, self.heads, "" if kv == self.heads else " H_kv=%d" % kv, self.seq_q,
                 self.seq_k, self.head_dim, "bf16" if self.dtype == ATTN_BF16 else "fp32",
                 " causal" if self.causal else "", self.scale,
                 " deterministic" if self.deterministic else ""))


_P = ctypes.POINTER(Problem)
_ptr = ctypes.c_void_p                            # device pointers and cudaStream_t
SUPPORTS_FN = ctypes.CFUNCTYPE(ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p))
WORKSPACE_FN = ctypes.CFUNCTYPE(ctypes.c_size_t, _P, ctypes.c_int)
#                                   p   q     k     v     o     lse   ws    stream
FORWARD_FN = ctypes.CFUNCTYPE(ctypes.c_int, _P, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr)
#                                    p   q     k     v     o     lse   dO    dq    dk    dv    ws    stream
BACKWARD_FN = ctypes.CFUNCTYPE(ctypes.c_int, _P, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr,
                               _ptr, _ptr, _ptr)
KNOWN_BUG_FN = ctypes.CFUNCTYPE(ctypes.c_char_p, _P)


class StepInfo(ctypes.Structure):
    """attn_step: what each build/steps/NN_name.so exports as attn_step_info."""
    _fields_ = [("name", ctypes.c_char_p), ("summary", ctypes.c_char_p),
                ("supports", SUPPORTS_FN), ("workspace_bytes", WORKSPACE_FN),
                ("forward", FORWARD_FN), ("backward", BACKWARD_FN),
                ("known_bug", KNOWN_BUG_FN),
                ("cc_min", ctypes.c_int), ("cc_max", ctypes.c_int),
                ("gpu_why", ctypes.c_char_p)]


# ----------------------------------------------------------------------------- finding steps

def steps_dir():
    """$ATTN_STEPS_DIR if set (as for the C tools), else build/steps beside this file's repo."""
    env = os.environ.get("ATTN_STEPS_DIR")
    if env:
        return Path(env)
    return _BUILD_STEPS


_BUILD_STEPS = Path(__file__).resolve().parent.parent / "build" / "steps"


def available(directory=None):
    """The names of the built steps ("00_materialized", ...), in order; [] when none are built."""
    d = Path(directory) if directory else steps_dir()
    try:
        mtime = d.stat().st_mtime_ns
    except OSError:
        return []
    hit = _listed.get(d)
    if hit is None or hit[0] != mtime:   # listed again only when the folder changed
        hit = _listed[d] = (mtime, sorted(p.stem for p in d.glob("*.so")
                                          if re.match(r"\d+_", p.name)))
    return list(hit[1])


_listed = {}


class Step:
    """One loaded step: its attn_step_info, read through ctypes, and thin callers around it."""

    def __init__(self, path):
        self.path = Path(path)
        try:
            self._lib = ctypes.CDLL(str(self.path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as e:
            raise OSError("cannot load %s: %s (is the CUDA runtime on LD_LIBRARY_PATH?)"
                          % (self.path, e)) from None
        try:
            info = StepInfo.in_dll(self._lib, "attn_step_info")
        except ValueError:
            raise ValueError("%s exports no attn_step_info: not a step of this series "
                             "(rebuild with make)" % self.path) from None
        self._info = info
        bad = []
        if info.name is None or info.name.decode(errors="replace") != self.path.stem:
            bad.append("its name is %r, not its file's %r" % (info.name, self.path.stem))
        for fn in ("supports", "workspace_bytes", "forward"):
            if not getattr(info, fn):
                bad.append("%s is NULL" % fn)
        if not (0 <= info.cc_min <= 1000 and 0 <= info.cc_max <= 1000) or (
                info.cc_min and info.cc_max and info.cc_min > info.cc_max):
            bad.append("cc_min, cc_max = %d, %d" % (info.cc_min, info.cc_max))
        if bad:
            raise ValueError("%s does not follow common/attention.h (%s): rebuild it with make"
                             % (self.path, "; ".join(bad)))
        self.name = info.name.decode()
        self.number = int(self.name.split("_", 1)[0])
        self.summary = (info.summary or b"").decode(errors="replace")
        self.cc_min, self.cc_max = info.cc_min, info.cc_max
        self.gpu_why = info.gpu_why.decode(errors="replace") if info.gpu_why else None
        # function pointers, read once (a NULL one is falsy)
        self._supports, self._workspace_bytes = info.supports, info.workspace_bytes
        self._forward = info.forward
        self._backward = info.backward if info.backward else None
        self._known_bug = info.known_bug if info.known_bug else None

    @property
    def has_backward(self):
        return self._backward is not None

    def __repr__(self):
        return "<flash_steps.Step %s>" % self.name

    def fits(self, cc):
        """(True, None) if the step's code runs on compute capability cc (major*10+minor), else
        (False, what it needs): attn_gpu_fits of attention.h."""
        ok = (not self.cc_min or cc >= self.cc_min) and (not self.cc_max or cc <= self.cc_max)
        return ok, None if ok else (self.gpu_why or "not built for this GPU")

    def supports(self, p, backward=False):
        """(status, why) from the step's supports(); why is None when it says ATTN_OK."""
        why = ctypes.c_char_p()
        st = self._supports(ctypes.byref(p), int(bool(backward)), ctypes.byref(why))
        return st, (why.value.decode(errors="replace") if why.value else None)

    def known_bug(self, p):
        """The step's reason string if it is known to be wrong on p (kept for a lesson), else None."""
        if self._known_bug is None:
            return None
        r = self._known_bug(ctypes.byref(p))
        return r.decode(errors="replace") if r else None

    def workspace_bytes(self, p, backward=False):
        return int(self._workspace_bytes(ctypes.byref(p), int(bool(backward))))


_loaded = {}


def load(step, directory=None):
    """A Step from build/steps, by number (2, "2", "02") or by name ("02_ragged_mask").

    FileNotFoundError when nothing is built there; ValueError when no such step is built or
    its .so does not follow the contract; OSError when the dynamic loader refuses it."""
    if isinstance(step, Step):
        return step
    d = Path(directory) if directory else steps_dir()
    names = available(d)
    if not names:
        raise FileNotFoundError("no steps built in %s: run `make` in the repository root "
                                "(or set ATTN_STEPS_DIR)" % d)
    spec = str(step).strip()
    if spec in names:
        name = spec
    elif re.fullmatch(r"\d+", spec):
        match = [n for n in names if int(n.split("_", 1)[0]) == int(spec)]
        if not match:
            raise ValueError("no step %s is built in %s (built: %s; run `make` to build the "
                             "rest)" % (spec, d, ", ".join(names)))
        name = match[0]
    else:
        raise ValueError("unknown step %r (built in %s: %s)" % (step, d, ", ".join(names)))
    path = d / (name + ".so")
    if path not in _loaded:
        _loaded[path] = Step(path)
    return _loaded[path]


# ------------------------------------------------------------------------------ the problem

def _device_cc(device):
    """This GPU's compute capability as major*10 + minor (a function, so tests can pretend)."""
    major, minor = torch.cuda.get_device_capability(device)
    return major * 10 + minor


_DTYPES = {torch.bfloat16: ATTN_BF16, torch.float32: ATTN_FP32} if torch is not None else {}


def _aligned(t):
    """t itself when its data pointer is 16-byte aligned (the contract's requirement), else a
    fresh contiguous copy (PyTorch's allocators align far beyond 16 bytes)."""
    if t.data_ptr() % 16 == 0:
        return t
    return torch.empty_like(t, memory_format=torch.contiguous_format).copy_(t)


def _shapes_want(q, k, v):
    """What (B, H, N, D) shapes must be, and what came (made only when raising: formatting sizes
    is no part of what torch.compile traces)."""
    return ("shapes must be q (B, H, Nq, D) and k, v (B, H_kv, Nk, D), with one B and one D (v's D "
            "is q's) and H a multiple of H_kv; got q %s, k %s, v %s"
            % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))


def _check_inputs(q, k, v, enable_gqa=False, four_d=False, fake=False):
    """Checks what q, k, v are (type, rank, dtype, shapes, device) without reading their data, so
    that the custom op's fake kernel runs it on FakeTensors and torch.compile traces it as plain
    Python; returns whether they came without the head axis. K and V may have H_kv heads where q
    has H (grouped-query attention) when H is a multiple of H_kv and enable_gqa is true, as in
    F.scaled_dot_product_attention. four_d: only (B, H, N, D) (sdpa and the custom ops); fake:
    meta tensors pass too (what register_fake also serves)."""
    for n, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise ValueError("%s must be a torch.Tensor, not %s" % (n, type(t).__name__))
    if four_d:
        if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
            raise ValueError("q, k, v must all be (B, H, N, D); got shapes %s, %s, %s"
                             % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    elif q.dim() not in (3, 4) or k.dim() != q.dim() or v.dim() != q.dim():
        raise ValueError("q, k, v must all be (B, H, N, D) or all (B, N, D); got shapes %s, %s, %s"
                         % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError("q, k, v must have one dtype; got %s, %s, %s" % (q.dtype, k.dtype, v.dtype))
    if q.dtype == torch.float16:
        raise ValueError("fp16 is not supported: the steps take bf16 or fp32 "
                         "(q.to(torch.bfloat16))")
    if q.dtype != torch.bfloat16 and q.dtype != torch.float32:
        raise ValueError("dtype %s is not supported: the steps take bf16 or fp32" % q.dtype)
    three = q.dim() == 3
    v_is_k = True   # index by index (what Dynamo traces plainly, with symbolic sizes too)
    for i in range(k.dim()):
        if v.shape[i] != k.shape[i]:
            v_is_k = False
    if three:
        B, Nq, D = q.shape
        if k.shape[0] != B or k.shape[2] != D or not v_is_k:
            raise ValueError("shapes must be q (B, Nq, D) and k, v (B, Nk, D), with one B and one D "
                             "(v's D is q's); got q %s, k %s, v %s"
                             % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    else:
        B, H, Nq, D = q.shape
        H_kv = k.shape[1]
        if k.shape[0] != B or k.shape[3] != D or not v_is_k:
            raise ValueError(_shapes_want(q, k, v))
        if H_kv != H:
            if H_kv < 1 or H % H_kv != 0:
                raise ValueError("%s: H = %d is not a multiple of H_kv = %d (grouped-query "
                                 "attention: query head h reads K/V head h / (H / H_kv))"
                                 % (_shapes_want(q, k, v), H, H_kv))
            if not enable_gqa:
                raise ValueError("k and v have H_kv = %d heads and q has H = %d: grouped-query "
                                 "attention, which needs enable_gqa=True (as in "
                                 "F.scaled_dot_product_attention); got q %s, k %s, v %s"
                                 % (H_kv, H, tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    dev = q.device
    if not (dev.type == "cuda" or (fake and dev.type == "meta")) or k.device != dev \
            or v.device != dev:
        raise ValueError("q, k, v must be CUDA tensors on one device; got %s, %s, %s"
                         % (q.device, k.device, v.device))
    return three


def _as_4d(q, k, v, enable_gqa=False, four_d=False):
    """Checks q, k, v (_check_inputs) and returns them as contiguous, 16-byte aligned
    (B, H, N, D) tensors (k and v (B, H_kv, Nk, D)), and whether they came without the head axis."""
    three = _check_inputs(q, k, v, enable_gqa, four_d)
    if three:
        q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
    return _aligned(q.contiguous()), _aligned(k.contiguous()), _aligned(v.contiguous()), three


def _problem(q4, k4, causal, scale, deterministic=False):
    B, H, Nq, D = q4.shape
    H_kv, Nk = k4.shape[1], k4.shape[2]
    for n, x in (("batch", B), ("heads", H), ("heads_kv", H_kv), ("seq_q", Nq), ("seq_k", Nk),
                 ("head_dim", D)):
        if x > INT_MAX:
            raise ValueError("%s = %d does not fit the contract's int" % (n, x))
    if scale is None:
        scale = 1.0 / math.sqrt(D) if D > 0 else 1.0
    return Problem(B, H, Nq, Nk, D, 1 if causal else 0, _DTYPES[q4.dtype], float(scale), H_kv,
                   1 if deterministic else 0)


def choose(q, k, v, causal=False, scale=None, enable_gqa=False):
    """The Step that attention() and sdpa() run for these inputs when step=None (see the module's
    doc). A step whose supports() refuses the problem (grouped-query attention included: only
    steps 00, 14 and 15 take H_kv < H; step 15 only Nq <= 16) is passed over, as for any problem
    it cannot do: decode problems go to step 15."""
    _need_torch()
    q4, k4, _, _ = _as_4d(q, k, v, enable_gqa)
    return _choose(_problem(q4, k4, causal, scale), q4.device)


def choose_backward(q, k, v, causal=False, scale=None, step=None, deterministic=False,
                    enable_gqa=False):
    """The Step whose backward differentiates attention(q, k, v, causal, scale, step,
    deterministic=...) when backward_step=None: the forward step's own backward if it has one that
    supports the problem, else the highest-numbered built step with a backward that fits this GPU
    and supports it (on Hopper step 14 for grouped-query problems, step 13 for multi-head ones;
    step 06 elsewhere; step 00 only when no other can, or when
    deterministic off Hopper, since step 06 adds dQ in whatever order its blocks run; see the
    module's doc)."""
    _need_torch()
    q4, k4, _, _ = _as_4d(q, k, v, enable_gqa)
    p = _problem(q4, k4, causal, scale, deterministic)
    s = _resolve(step, p, q4.device)
    return _backward_step(s, p, _device_cc(q4.device))


_SCALAR_LESSONS = ("01_", "02_")   # slower than step 00's cuBLAS products (see the module's doc)


def _materialized_if_it_fits(p, device, cc):
    """Step 00 when it is built, runs here, takes p both ways and its workspace fits in the free
    memory of device; else None."""
    names = [n for n in available() if n.startswith("00_")]
    if not names:
        return None
    s = load(names[0])
    if not s.fits(cc)[0] or s.supports(p, False)[0] != ATTN_OK or s.known_bug(p):
        return None
    need = s.workspace_bytes(p, False)
    if s.supports(p, True)[0] == ATTN_OK:
        need = max(need, s.workspace_bytes(p, True))
    free, _ = torch.cuda.mem_get_info(device)
    return s if need <= free else None


def _choose(p, device):
    cc = _device_cc(device)
    reasons = []
    waiting = None   # (a step that defers to the one it was built from, that one's prefix)
    for name in reversed(available()):
        s = load(name)
        ok, why = s.fits(cc)
        if ok:
            st, why = s.supports(p, False)
            if st == ATTN_OK:
                why = s.known_bug(p)
                if why is None:
                    if waiting:   # the step it defers to, or, where that one cannot, itself
                        return s if name.startswith(waiting[1]) else waiting[0]
                    if name.startswith(_SCALAR_LESSONS):
                        return _materialized_if_it_fits(p, device, cc) or s
                    to = _defers_to(s, p)
                    if to is None:
                        return s
                    waiting = (s, to)
                    continue
                why = "known bug: " + why
        reasons.append("%s: %s" % (name, why))
    if waiting:
        return waiting[0]
    if not reasons:
        load(0)   # raises FileNotFoundError: nothing built
    raise ValueError("no built step can do %r on this GPU (sm_%d): %s" % (p, cc, "; ".join(reasons)))


def _resolve(step, p, device):
    if step is None:
        return _choose(p, device)
    s = load(step)
    ok, why = s.fits(_device_cc(device))
    if not ok:
        raise ValueError("step %s cannot run on this GPU (sm_%d): %s"
                         % (s.name, _device_cc(device), why))
    return s


def _refused(s, p, backward):
    """None if the step accepts p, else the error to raise, quoting its why."""
    st, why = s.supports(p, backward)
    if st == ATTN_OK:
        return None
    return ValueError("step %s: %s%s for %r: %s" % (s.name, STATUS_NAMES[st] if 0 <= st < 5 else st,
                      " (backward)" if backward else "", p, why))


def _poison():
    return os.environ.get("FLASH_STEPS_POISON") == "1"


def _out(like, shape=None, dtype=None):
    """An output buffer: empty, or NaN under FLASH_STEPS_POISON=1."""
    t = torch.empty(like.shape if shape is None else shape, dtype=dtype or like.dtype,
                    device=like.device)
    return t.fill_(float("nan")) if _poison() else t


def _workspace(s, p, backward, device):
    n = s.workspace_bytes(p, backward)
    try:   # never a NULL pointer, even for 0 bytes; undefined contents, as the contract says
        w = torch.empty(max(n, 1), dtype=torch.uint8, device=device)
        return w.fill_(0xff) if _poison() else w
    except torch.cuda.OutOfMemoryError as e:
        raise torch.cuda.OutOfMemoryError("step %s needs %.1f GiB of workspace for %r: %s"
                                          % (s.name, n / 2**30, p, e)) from None


def _check(status, s, what, p):
    if status == ATTN_OK:
        return
    if status in (ATTN_ERR_INVALID, ATTN_ERR_UNSUPPORTED):
        err = _refused(s, p, what == "backward")
        raise err or ValueError("step %s %s returned %s for %r (supports() accepted it: %s)"
                                % (s.name, what, STATUS_NAMES[status], p,
                                   s.gpu_why or "a NULL pointer?"))
    if status == ATTN_ERR_NO_MEMORY:
        raise MemoryError("step %s %s: ATTN_ERR_NO_MEMORY for %r" % (s.name, what, p))
    raise RuntimeError("step %s %s: %s for %r (a CUDA call failed)"
                       % (s.name, what, STATUS_NAMES[status] if 0 <= status < 5 else status, p))


def _forward(s, p, q4, k4, v4):
    err = _refused(s, p, False)
    if err:
        raise err
    bug = s.known_bug(p)
    if bug:
        warnings.warn("step %s is known to give a wrong answer on %r: %s" % (s.name, p, bug),
                      RuntimeWarning, stacklevel=4)
    dev = q4.device
    ws = _workspace(s, p, False, dev)
    o = _out(q4)
    lse = _out(q4, (p.batch, p.heads, p.seq_q), torch.float32)
    stream = torch.cuda.current_stream(dev).cuda_stream
    st = s._forward(ctypes.byref(p), q4.data_ptr(), k4.data_ptr(), v4.data_ptr(), o.data_ptr(),
                    lse.data_ptr(), ws.data_ptr(), stream)
    _check(st, s, "forward", p)
    return o, lse


# A backward that defers to the one it was built from on the problems that do not need what it
# adds: step 14's grouped-query backward measured 5 % slower than step 13's on multi-head problems
# (notes/14_gqa.md), so a multi-head problem takes step 13's where step 13 is built and takes it.
_DEFERS_WITHOUT_GROUPS = {"14_": "13_"}


def _defers_to(b, p):
    """The prefix of the step that backward b gives way to on p, or None."""
    if 0 < p.heads_kv < p.heads:
        return None
    return next((to for pre, to in _DEFERS_WITHOUT_GROUPS.items() if b.name.startswith(pre)), None)


def _backward_step(s, p, cc):
    """The step whose backward follows step s's forward on p, on a GPU of compute capability cc:
    s's own if it has a backward that takes p, else the highest-numbered built step that has a
    backward, fits cc and supports p (the fastest: 14 on Hopper for grouped-query problems, 13
    for multi-head ones (_defers_to), 06 elsewhere); step 00 is the lowest-numbered, so
    it is taken only when no other backward can do p."""
    if s.has_backward and s.supports(p, True)[0] == ATTN_OK:
        return s
    reasons = []
    waiting = None   # (a backward that defers, the prefix of the step it defers to)
    for name in reversed(available()):
        b = load(name)
        if not b.has_backward:
            continue
        ok, why = b.fits(cc)
        if ok:
            st, why = b.supports(p, True)
            if st == ATTN_OK:
                if waiting and not name.startswith(waiting[1]):
                    return waiting[0]   # the step it defers to cannot: it runs after all
                to = _defers_to(b, p)
                if to is None or waiting:
                    return b
                waiting = (b, to)
                continue
        reasons.append("%s: %s" % (name, why))
    if waiting:
        return waiting[0]
    raise ValueError("no built step has a backward for %r on this GPU (sm_%d)%s"
                     % (p, cc, (": " + "; ".join(reasons)) if reasons else
                        " (no step with a backward is built: run make)"))


def _backward(s, p, q4, k4, v4, o4, lse, do4, backward_step=None):
    if backward_step is None:
        b = _backward_step(s, p, _device_cc(q4.device))
    else:
        b = _resolve(backward_step, p, q4.device)
    err = _refused(b, p, True)
    if err:
        raise err
    if not b.has_backward:
        raise ValueError("step %s has no backward" % b.name)
    dev = q4.device
    ws = _workspace(b, p, True, dev)
    dq, dk, dv = _out(q4), _out(k4), _out(v4)
    stream = torch.cuda.current_stream(dev).cuda_stream
    st = b._backward(ctypes.byref(p), q4.data_ptr(), k4.data_ptr(), v4.data_ptr(), o4.data_ptr(),
                     lse.data_ptr(), do4.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                     ws.data_ptr(), stream)
    _check(st, b, "backward", p)
    return dq, dk, dv


# ------------------------------------------------------------------------------- the front door

class _NoTorchFunction:
    """What FlashAttention derives from when torch is missing: apply() says so."""

    @classmethod
    def apply(cls, *args, **kwargs):
        _need_torch()


class FlashAttention(torch.autograd.Function if torch is not None else _NoTorchFunction):
    """apply(q, k, v, is_causal=False, scale=None, step=None, return_lse=False,
    backward_step=None, deterministic=False, enable_gqa=False), positionally.

    Returns O (and lse when return_lse). Saves L, the lse, as (B, Nq) for 3-D inputs and
    (B, H, Nq) for 4-D ones, with q, k, v and O, for the backward: the forward step's own when it
    has one that supports the problem, else the fastest built backward that does (on Hopper 14
    grouped, 13 multi-head; 06 elsewhere; step 00's only when no other can), or backward_step
    when given (see the module's doc)."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal=False, scale=None, step=None, return_lse=False,
                backward_step=None, deterministic=False, enable_gqa=False):
        q4, k4, v4, three = _as_4d(q, k, v, enable_gqa)
        p = _problem(q4, k4, is_causal, scale, deterministic)
        with torch.cuda.device(q4.device):
            s = _resolve(step, p, q4.device)
            o4, lse = _forward(s, p, q4, k4, v4)
        L = lse.squeeze(1) if three else lse
        ctx.save_for_backward(L, q4, k4, v4, o4)
        ctx.step, ctx.problem, ctx.three = s, p, three
        ctx.backward_step = backward_step
        o = o4.squeeze(1) if three else o4
        if return_lse:
            ctx.mark_non_differentiable(L)
            return o, L
        return o

    @staticmethod
    def backward(ctx, do, *unused_dlse):
        L, q4, k4, v4, o4 = ctx.saved_tensors
        lse = L.unsqueeze(1) if ctx.three else L
        do4 = _aligned((do.unsqueeze(1) if ctx.three else do).to(o4.dtype).contiguous())
        with torch.cuda.device(q4.device):
            dq, dk, dv = _backward(ctx.step, ctx.problem, q4, k4, v4, o4, lse, do4,
                                   ctx.backward_step)
        if ctx.three:
            dq, dk, dv = dq.squeeze(1), dk.squeeze(1), dv.squeeze(1)
        return dq, dk, dv, None, None, None, None, None, None, None


def attention(q, k, v, causal=False, scale=None, step=None, return_lse=False, backward_step=None,
              deterministic=False, enable_gqa=False):
    """O = softmax(scale * q k^T, causal mask) v by one step of the series, differentiable.

    q (B, H, Nq, D), k and v (B, H, Nk, D), or all three (B, N, D); CUDA, bf16 or fp32; any
    strides and any alignment (misaligned tensors are copied to aligned ones; see the module doc).
    With enable_gqa=True, k and v may have H_kv heads where q has H, H a multiple of H_kv
    (grouped-query attention; query head h reads K/V head h / (H / H_kv); dk and dv come back with
    H_kv heads); only steps 00, 14 and 15 (Nq <= 16) take it, and the choice passes over the
    others.
    scale defaults to 1/sqrt(D). step=None takes the highest-numbered built step that fits this
    GPU and supports the problem (the fastest, by the construction of the series; see the module
    doc for the exceptions), step=N or a name picks one. The backward is the forward step's
    own if it has one for the problem, else the fastest built backward that supports it (on
    Hopper 14 grouped, 13 multi-head; 06 elsewhere; step 00's materialized backward only when no
    other can);
    backward_step=N picks one. deterministic=True asks for a backward whose dQ, dK and dV are the
    same bits on every call with the same inputs: a step whose backward cannot refuses it (06
    adds dQ in whatever order its blocks run), so that is step 13's or 14's on Hopper (a writer
    warp adds dQ in turns), step 00's elsewhere, where it fits.
    Returns O, or (O, lse) with return_lse=True, lse float32 (B, H, Nq) ((B, Nq) for 3-D inputs,
    natural log)."""
    _need_torch()
    return FlashAttention.apply(q, k, v, bool(causal), scale, step, bool(return_lse), backward_step,
                                bool(deterministic), bool(enable_gqa))


# ------------------------------------------------------------- the PyTorch operator and sdpa()
#
# flash_steps::attention_fwd and flash_steps::attention_bwd are torch.library custom ops, so that
# torch.compile(fullgraph=True) keeps a model that calls sdpa() in one graph: Dynamo and
# AOTAutograd see one opaque node per call, shaped by the fake kernels below, which read shapes and
# dtypes only (no GPU call, no step). The step is chosen inside the real kernels, at run time, on
# every call, by the same rule as attention() (_resolve: step "" is the door's choice, else a
# number or a name); the outputs' shapes and dtypes do not depend on which step runs, so the fake
# kernels need not know it. The backward kernel resolves the forward step again from the same
# arguments and problem (same shapes, dtypes, device) and takes its backward by _backward_step,
# so it pairs as attention() pairs them. Only the step-00-for-the-lessons exception reads the free
# memory; where the two calls see different free memory, the two choices can differ only between
# step 00 and a lesson 01/02, and the backward is step 00's either way: what falls to the lessons
# no later step's forward takes, and no later step's backward takes a problem its forward refuses.

def _step_spec(step):
    """A step (None, a number, a name or a Step) as the custom ops' string: "" for the door's
    choice."""
    if step is None:
        return ""
    if isinstance(step, Step):
        return step.name
    return str(step)


if torch is not None:
    from typing import Optional, Tuple

    def _check_bwd_args(do, q, o, lse):
        """attention_bwd's dO, O and lse against q: their shapes, lse's dtype and their device
        (a pointer on another device, or the host, would reach the step's kernels)."""
        B, H, Nq, _ = q.shape
        if do.shape != q.shape or o.shape != q.shape or tuple(lse.shape) != (B, H, Nq) \
                or lse.dtype != torch.float32:
            raise ValueError("attention_bwd: dO and O must be shaped as q %s and lse float32 %s; "
                             "got dO %s, O %s, lse %s %s" % (tuple(q.shape), (B, H, Nq),
                                                              tuple(do.shape), tuple(o.shape),
                                                              tuple(lse.shape), lse.dtype))
        if not do.device == o.device == lse.device == q.device:
            raise ValueError("attention_bwd: dO, O and lse must be on q's device %s; got dO on %s, "
                             "O on %s, lse on %s" % (q.device, do.device, o.device, lse.device))

    def _attention_fwd_impl(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                            scale: Optional[float], step: str, backward_step: str,
                            deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor]:
        q4, k4, v4, _ = _as_4d(q, k, v, enable_gqa=True, four_d=True)
        p = _problem(q4, k4, causal, scale, deterministic)
        with torch.cuda.device(q4.device):
            s = _resolve(step or None, p, q4.device)
            return _forward(s, p, q4, k4, v4)

    def _attention_bwd_impl(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                            o: torch.Tensor, lse: torch.Tensor, causal: bool,
                            scale: Optional[float], step: str, backward_step: str,
                            deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor,
                                                          torch.Tensor]:
        q4, k4, v4, _ = _as_4d(q, k, v, enable_gqa=True, four_d=True)
        _check_bwd_args(do, q4, o, lse)
        p = _problem(q4, k4, causal, scale, deterministic)
        o4 = _aligned(o.to(q4.dtype).contiguous())
        do4 = _aligned(do.to(q4.dtype).contiguous())
        lse4 = _aligned(lse.contiguous())
        with torch.cuda.device(q4.device):
            s = _resolve(step or None, p, q4.device)
            return _backward(s, p, q4, k4, v4, o4, lse4, do4, backward_step or None)

    def _attention_fwd_fake(q, k, v, causal, scale, step, backward_step, deterministic):
        _check_inputs(q, k, v, enable_gqa=True, four_d=True, fake=True)
        B, H, Nq, _ = q.shape
        return q.new_empty(q.shape), q.new_empty((B, H, Nq), dtype=torch.float32)

    def _attention_bwd_fake(do, q, k, v, o, lse, causal, scale, step, backward_step,
                            deterministic):
        _check_inputs(q, k, v, enable_gqa=True, four_d=True, fake=True)
        _check_bwd_args(do, q, o, lse)
        return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)

    def _attention_setup_context(ctx, inputs, output):
        q, k, v, causal, scale, step, backward_step, deterministic = inputs
        o, lse = output
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.args = (causal, scale, step, backward_step, deterministic)
        ctx.mark_non_differentiable(lse)   # the steps' backwards take dO only, as attention()'s

    def _attention_backward(ctx, do, dlse):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = torch.ops.flash_steps.attention_bwd(do, q, k, v, o, lse, *ctx.args)
        return dq, dk, dv, None, None, None, None, None

    def _register_ops():
        """Defines flash_steps::attention_fwd and ::attention_bwd once per process: a second copy
        of this module (run as a script, or reloaded) finds them defined and uses them."""
        try:
            torch.ops.flash_steps.attention_fwd
            return
        except (AttributeError, RuntimeError):
            pass
        fwd = torch.library.custom_op("flash_steps::attention_fwd", _attention_fwd_impl,
                                      mutates_args=())
        bwd = torch.library.custom_op("flash_steps::attention_bwd", _attention_bwd_impl,
                                      mutates_args=())
        fwd.register_fake(_attention_fwd_fake)
        bwd.register_fake(_attention_bwd_fake)
        fwd.register_autograd(_attention_backward, setup_context=_attention_setup_context)

    _register_ops()


def sdpa(query, key, value, is_causal=False, scale=None, enable_gqa=False, *, attn_mask=None,
         dropout_p=0.0, step=None, backward_step=None, deterministic=False):
    """F.scaled_dot_product_attention's call, by the steps of the series: O, differentiable.

    query (B, H, Nq, D), key and value (B, H_kv, Nk, D): CUDA, bf16 or fp32, any strides.
    is_causal: top-left, as SDPA's; scale: default 1/sqrt(D); enable_gqa=True lets H_kv divide H
    (grouped-query attention, query head h reads K/V head h / (H / H_kv), as SDPA's enable_gqa;
    without it H_kv != H is a ValueError, and so is H not a multiple of H_kv). attn_mask and
    dropout_p are keyword-only here and take only None and 0.0 (SDPA's 4th and 5th positional
    arguments are attn_mask and dropout_p: pass is_causal, scale and enable_gqa by keyword to keep
    a call the same for both).

    It calls the custom op flash_steps::attention_fwd, whose registered autograd formula calls
    flash_steps::attention_bwd, so torch.compile(model, fullgraph=True) traces it without a graph
    break. The step is the door's choice, as attention()'s, made inside the op at run time (see the
    comment above _step_spec); step=, backward_step= (a number, a name or a Step) and
    deterministic= are attention()'s."""
    _need_torch()
    if attn_mask is not None:
        raise ValueError("sdpa: attn_mask is not supported (only is_causal's mask)")
    if dropout_p != 0.0:
        raise ValueError("sdpa: dropout is not supported (dropout_p must be 0.0)")
    _check_inputs(query, key, value, enable_gqa, four_d=True)
    o, _ = torch.ops.flash_steps.attention_fwd(
        query, key, value, bool(is_causal), None if scale is None else float(scale),
        _step_spec(step), _step_spec(backward_step), bool(deterministic))
    return o


# ---------------------------------------------------------------------------------- a listing

def _main():
    names = available()
    if not names:
        print("no steps built in %s: run make" % steps_dir())
        return 1
    if torch is None:
        cc, gpu = None, ", GPU not asked (no PyTorch here; build/attn list says which steps run)"
    else:
        cc = _device_cc(0) if torch.cuda.is_available() else None
        gpu = ", GPU sm_%d" % cc if cc else ", no GPU"
    print("steps in %s%s" % (steps_dir(), gpu))
    for n in names:
        try:
            s = load(n)
        except (OSError, ValueError) as e:   # named, and the others go on (as attn list does)
            print("  %-28s does not load: %s" % (n, e))
            continue
        need = "any GPU" if not (s.cc_min or s.cc_max) else (s.gpu_why or "cc %d..%d" % (
            s.cc_min, s.cc_max))
        here = "" if cc is None else ("  [runs here]" if s.fits(cc)[0] else "  [not on this GPU]")
        print("  %-28s %-9s %s%s\n      %s" % (n, "fwd+bwd" if s.has_backward else "fwd",
                                             need, here, s.summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
