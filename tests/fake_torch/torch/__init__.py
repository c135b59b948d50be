"""A stand-in for torch, enough of it for bench/peer_sdpa.py to run its whole plan on a machine
with no GPU and no torch (tests/peer_script.sh): tensors carry a shape, a dtype and whether they
hold NaN, nothing else; every call returns at once; CUDA graphs cannot be captured, so the script
takes its eager path. It checks the script's control flow and its CSV, never a number."""
import time as _time

__version__ = "0.0-fake"


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


bfloat16, float32, uint8 = _Dtype("bfloat16"), _Dtype("float32"), _Dtype("uint8")


class Tensor:
    def __init__(self, shape, dtype=float32):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.nan = False
        self.requires_grad = False

    def _like(self):
        return Tensor(self.shape, self.dtype)

    def __add__(self, other):
        return self._like()

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __add__

    def to(self, dtype):
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


def manual_seed(seed):
    return None


class _Autograd:
    class Function:   # python/flash_steps.py subclasses it at import
        pass

    @staticmethod
    def grad(outputs, inputs, grad_outputs=None, retain_graph=None):
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
        def replay(self):
            raise RuntimeError("fake torch: no graphs")

    class _Context:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class graph(_Context):
        def __enter__(self):
            raise RuntimeError("fake torch: CUDA graphs cannot be captured here")

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
