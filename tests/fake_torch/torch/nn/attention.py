import enum


class SDPBackend(enum.Enum):
    FLASH_ATTENTION = 1
    CUDNN_ATTENTION = 2
    EFFICIENT_ATTENTION = 3
    MATH = 4


class sdpa_kernel:
    def __init__(self, backend):
        self.backend = backend

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
