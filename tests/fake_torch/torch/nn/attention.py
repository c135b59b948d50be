import enum


class SDPBackend(enum.Enum):
    FLASH_ATTENTION = 1
    CUDNN_ATTENTION = 2
    EFFICIENT_ATTENTION = 3
    MATH = 4


current = None   # the backend forced by the innermost sdpa_kernel


class sdpa_kernel:
    def __init__(self, backend):
        self.backend = backend

    def __enter__(self):
        global current
        self.before, current = current, self.backend
        return self

    def __exit__(self, *exc):
        global current
        current = self.before
        return False
