"""Legacy NKI (``neuronxcc.nki``): value-returning ISA calls, index grids, masks, block
dimensions, ``nki.simulate_kernel`` / ``baremetal`` / ``benchmark``. Same interpreter as ``nki``."""

from neuronxcc.nki import isa, language, typing
from nki._api import (
    BenchmarkKernel,
    baremetal,
    benchmark,
    make_jit,
    profile,
    simulate,
    simulate_kernel,
)
from nki._kernel import Kernel, KernelRun, last_run
from nki.isa import NkiCapacityError, NkiValidationError

jit = make_jit(legacy=True)
trace = make_jit(legacy=True)

__all__ = [
    "BenchmarkKernel",
    "Kernel",
    "KernelRun",
    "NkiCapacityError",
    "NkiValidationError",
    "baremetal",
    "benchmark",
    "isa",
    "jit",
    "language",
    "last_run",
    "profile",
    "simulate",
    "simulate_kernel",
    "trace",
    "typing",
]
