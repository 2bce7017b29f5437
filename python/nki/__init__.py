"""NKI (Neuron Kernel Interface) on vtrn: kernels traced, checked, timed and run on the CPU.

``import nki`` gives the NKI 0.2+ API (``nki.jit``, ``nki.language``, ``nki.isa``,
``nki.simulate``); ``neuronxcc.nki`` gives the legacy one. A launch traces the kernel into an
instruction program, checks it against the hardware's rules (the AWS simulator's error texts,
plus SBUF/PSUM capacity, which the simulator does not check), models its time on the
NeuronCore's engines, and runs it in C++. See docs/nki.md.
"""

from nki import isa, language, typing
from nki._api import (
    BenchmarkKernel,
    Latency,
    baremetal,
    benchmark,
    make_jit,
    profile,
    simulate,
    simulate_kernel,
    write_trace,
)
from nki._kernel import Kernel, KernelRun, last_run
from nki.isa import NkiCapacityError, NkiValidationError

jit = make_jit(legacy=False)

__all__ = [
    "BenchmarkKernel",
    "Kernel",
    "KernelRun",
    "Latency",
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
    "typing",
    "write_trace",
]
