"""``torch_neuronx.compiler``: compile-only mode (``compile_only()``,
``TORCH_NEURONX_COMPILE_ONLY=1``), in which operations compile but never run.

vtrn does not have compile-only mode yet: ``compile_only`` raises NotImplementedError naming
itself. This module is the one to replace when it is implemented."""

from __future__ import annotations

from torch_neuronx._missing import not_implemented

__all__ = ["compile_only"]


def compile_only():
    """Context manager in which operations compile into the cache but do not run."""
    raise not_implemented(
        "torch_neuronx.compiler.compile_only",
        "vtrn runs every op on the CPU, so the run itself compiles and fills the cache",
    )
