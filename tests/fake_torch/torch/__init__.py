"""A stand-in for torch, enough of it for bench/peer_sdpa.py to run its whole plan on a machine
with no GPU and no torch (tests/peer_script.sh): tensors carry a shape, a dtype and whether they
hold NaN, nothing else; every call returns at once. It checks the script's control flow and its
CSV, never a number. CUDA graphs capture as torch's do in one respect that the script must get
right: a graph reads the tensors it was captured on by address and does not keep them alive, so
a replay after one of them was freed fails as an illegal memory access does on the GPU (a real
replay would read memory handed to someone else; this one says so). FAKE_TORCH_NO_GRAPHS=1
refuses every capture instead, so that the eager fallback runs."""
import os as _os
import time as _time
import weakref as _weakref

__version__ = "0.0-fake"


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


bfloat16, float32, uint8 = _Dtype("bfloat16"), _Dtype("float32"), _Dtype("uint8")


_serial = [0]        # tensors made so far: a graph's inputs are those made before its capture
_capturing = [None]  # the graph being captured, if any


class Tensor:
    def __init__(self, shape, dtype=float32):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.nan = False
        self.requires_grad = False
        _serial[0] += 1
        self.serial = _serial[0]
        g = _capturing[0]
        if g is not None:   # made inside a capture: the graph's own memory, written by a replay
            g._made.append(_weakref.ref(self))

    def _use(self):
        """A kernel reads this tensor: inside a capture, the graph now depends on it."""
        g = _capturing[0]
        if g is not None and self.serial <= g._first_serial:
            g._reads.append(_weakref.ref(self))
        return self

    def _like(self):
        self._use()
        return Tensor(self.shape, self.dtype)

    def __add__(self, other):
        if isinstance(other, Tensor):
            other._use()
        return self._like()

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __add__

    def to(self, dtype):
        self._use()
        return Tensor(self.shape, dtype)

    def requires_grad_(self, flag=True):
        self.requires_grad = bool(flag)
        return self

    def fill_(self, value):
        self.nan = value != value
        return self

    def zero_(self):
        self.nan = False
        return self

    def all(self):
        return self

    def __bool__(self):
        return not self.nan

    def data_ptr(self):
        self._use()
        return 0   # never dereferenced: the step's call checks the GPU first

    @property
    def device(self):
        return "cuda"


def _shape(shape):
    return shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def randn(*shape, device=None, dtype=float32, requires_grad=False):
    return Tensor(_shape(shape), dtype).requires_grad_(requires_grad)


def empty_like(t):
    return t._like()


rand = empty = randn


def isfinite(t):
    return t


def amax(t, dim=None, out=None):   # the read flush: a reduction that reads t
    t._use()
    return out if out is not None else Tensor((), t.dtype)


def manual_seed(seed):
    return None


class _Autograd:
    class Function:   # python/flash_steps.py subclasses it at import
        pass

    @staticmethod
    def grad(outputs, inputs, grad_outputs=None, retain_graph=None):
        for t in (outputs, grad_outputs):
            if isinstance(t, Tensor):
                t._use()
        return tuple(t._like() for t in inputs)


autograd = _Autograd()


class _Op:   # what torch.library.custom_op returns: flash_steps registers its ops at import
    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def register_fake(self, fn):
        return fn

    def register_autograd(self, fn, setup_context=None):
        return None


class _Library:
    @staticmethod
    def custom_op(name, fn=None, mutates_args=()):
        return _Op(name, fn)


library = _Library()


class _Ops:   # torch.ops.flash_steps.attention_fwd: not defined until registered
    def __getattr__(self, name):
        raise AttributeError(name)


ops = _Ops()


class _Cuda:
    class OutOfMemoryError(RuntimeError):
        pass

    class Stream:
        cuda_stream = 0

        def wait_stream(self, other):
            return None

        def synchronize(self):
            return None

    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self, stream=None):
            self.t = _time.perf_counter()

        def synchronize(self):
            return None

        def elapsed_time(self, end):
            return max((end.t - self.t) * 1e3, 1e-3)

    class CUDAGraph:
        def __init__(self):
            self._reads, self._made, self._first_serial = [], [], 0

        def replay(self):
            if any(r() is None for r in self._reads):
                raise RuntimeError("CUDA error: an illegal memory access was encountered (fake torch: "
                                   "the graph read a tensor that was freed after its capture)")
            for r in self._made:   # the replay writes what the capture made
                t = r()
                if t is not None:
                    t.nan = False

    class _Context:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class graph(_Context):
        def __init__(self, g, stream=None, pool=None):
            self.g = g

        def __enter__(self):
            if _os.environ.get("FAKE_TORCH_NO_GRAPHS") == "1":
                raise RuntimeError("fake torch: CUDA graphs cannot be captured here")
            self.g._first_serial = _serial[0]
            _capturing[0] = self.g
            return self

        def __exit__(self, *exc):
            _capturing[0] = None
            return False

    class _Props:
        L2_cache_size = 50 << 20

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_name(device=None):
        return "Fake GPU"

    @classmethod
    def get_device_properties(cls, device=0):
        return cls._Props()

    @classmethod
    def stream(cls, s):
        return cls._Context()

    @classmethod
    def current_stream(cls, device=None):
        return cls.Stream()

    @staticmethod
    def synchronize():
        return None

    @staticmethod
    def empty_cache():
        return None

    @staticmethod
    def _sleep(cycles):
        return None


cuda = _Cuda()
from . import nn  # noqa: E402,F401
