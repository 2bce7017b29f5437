"""``torch_neuronx.compiler``: compile-only mode (``compile_only()``,
``TORCH_NEURONX_COMPILE_ONLY=1``), in which operations compile but never run.

In compile-only mode every eager op and every compiled graph lowers and compiles into the
compile cache (memory and disk) as usual, but its executable is not run: its outputs hold
sentinels (NaN in floating tensors, 4 in integer ones). ``vtrn.metrics()`` counts them as
``skipped_kernels``, never as ``executed_kernels``. A later normal run with the same
``TORCH_NEURONX_NEFF_CACHE_DIR`` finds every executable in the cache. Copies between the host
and the device, CPU fallbacks and runtime kernels (random fills) still run."""

from __future__ import annotations

import contextlib

__all__ = ["compile_only", "is_compile_only"]


def is_compile_only() -> bool:
    """Whether compile-only mode is on (the environment variable or an open compile_only())."""
    from vtrn import _C

    return bool(_C._compile_only())


@contextlib.contextmanager
def compile_only():
    """Context manager: operations issued inside it compile into the cache but do not run.
    The mode is process-wide (every thread) and restored on exit."""
    import vtrn
    from vtrn import _C

    vtrn.register()
    before = bool(_C._compile_only())
    _C._set_compile_only(True)
    try:
        yield
    finally:
        _C._set_compile_only(before)
