import warnings

from .. import Tensor, float32
from . import attention


def scaled_dot_product_attention(q, k, v, is_causal=False, scale=None, enable_gqa=False):
    """The shape of the answer; flash refuses fp32 as torch's does (a warning, then no kernel)."""
    if q.shape[1] != k.shape[1] and not enable_gqa:
        raise RuntimeError("fake torch: heads differ and enable_gqa is off")
    if attention.current == attention.SDPBackend.FLASH_ATTENTION and q.dtype is float32:
        warnings.warn("Flash attention kernel not used because: Expected query, key and value to "
                      "all be of dtype: {Half, BFloat16}. Got Query dtype: float")
        raise RuntimeError("No available kernel. Aborting execution.")
    for t in (q, k, v):
        t._use()
    return Tensor(q.shape[:-1] + v.shape[-1:], q.dtype)
