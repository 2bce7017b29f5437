"""The kernel entry points both API generations share: jit, simulate, baremetal, benchmark,
profile."""

import json
import os

from nki import _kernel
from nki._kernel import Kernel, KernelRun


def make_jit(legacy: bool):
    def jit(
        func=None,
        mode=None,
        platform_target=None,
        show_compiler_tb=None,
        debug_kernel=None,
        **options,
    ):
        """@nki.jit, bare or with options. ``mode`` and ``platform_target`` are accepted and
        ignored: on vtrn every launch is traced, checked, timed and run on the CPU (set
        NEURON_PLATFORM_TARGET_OVERRIDE to choose the modeled NeuronCore)."""

        def wrap(f):
            if isinstance(f, Kernel):
                f = f.func
            return Kernel(f, legacy=legacy, mode=mode, **options)

        return wrap if func is None else wrap(func)

    return jit


def _as_kernel(kernel, legacy=False):
    return kernel if isinstance(kernel, Kernel) else Kernel(kernel, legacy=legacy)


def simulate(kernel):
    """``nki.simulate(kernel)(*args)``: runs the kernel on NumPy arrays or torch tensors and
    returns the same kind."""
    kernel = _as_kernel(kernel)

    def run(*args, **kwargs):
        return _kernel.launch(kernel, args, kwargs)

    return run


def simulate_kernel(kernel, *args, **kwargs):
    """Legacy ``nki.simulate_kernel(kernel, *numpy_args)``: NumPy in, NumPy out."""
    return _kernel.run_numpy(_as_kernel(kernel), args, kwargs)


def baremetal(kernel=None, **options):
    """``nki.baremetal(kernel)`` or ``@nki.baremetal(...)``: on vtrn the kernel runs on the CPU
    interpreter; its modeled latency is in ``kernel.last_run``."""
    if kernel is None:
        return lambda k: _as_kernel(k)
    return _as_kernel(kernel)


class Latency:
    def __init__(self, latency_us: float):
        self._us = latency_us

    def get_latency_percentile(self, percentile) -> float:
        """The modeled latency in microseconds (the model is deterministic: every percentile
        is the same)."""
        if not 0 <= float(percentile) <= 100:
            raise ValueError(f"percentile {percentile} is not in [0, 100]")
        return self._us


class BenchmarkResult:
    def __init__(self, run: KernelRun):
        self.nc_latency = Latency(run.latency_us)
        self.run = run


class BenchmarkKernel:
    """``nki.benchmark(warmup=, iters=)(kernel)``: runs the kernel once (the model is
    deterministic, so warmup and iterations add nothing) and reports its modeled latency in
    ``.benchmark_result.nc_latency``."""

    def __init__(self, kernel, warmup=10, iters=100, **options):
        self.kernel = _as_kernel(kernel)
        self.warmup, self.iters, self.options = warmup, iters, options
        self.benchmark_result = None

    def __getitem__(self, grid):
        return BenchmarkKernel(self.kernel[grid], self.warmup, self.iters, **self.options)

    def __call__(self, *args, **kwargs):
        result = _kernel.launch(self.kernel, args, kwargs)
        self.benchmark_result = BenchmarkResult(self.kernel.last_run)
        return result


def benchmark(kernel=None, warmup=10, iters=100, **options):
    if kernel is None:
        return lambda k: BenchmarkKernel(k, warmup, iters, **options)
    return BenchmarkKernel(kernel, warmup, iters, **options)


class ProfileKernel(BenchmarkKernel):
    """``nki.profile(working_directory=...)(kernel)``: runs the kernel and writes its modeled
    engine timeline as a Chrome trace (open it in Perfetto or chrome://tracing)."""

    def __getitem__(self, grid):
        return ProfileKernel(self.kernel[grid], **self.options)

    def __call__(self, *args, **kwargs):
        result = super().__call__(*args, **kwargs)
        directory = self.options.get("working_directory") or "."
        name = self.options.get("save_trace_name") or f"{self.kernel.__name__}.json"
        if not name.endswith(".json"):
            name += ".json"
        os.makedirs(directory, exist_ok=True)
        write_trace(self.kernel.last_run, os.path.join(directory, name))
        return result


def profile(kernel=None, **options):
    if kernel is None:
        return lambda k: ProfileKernel(k, **options)
    return ProfileKernel(kernel, **options)


def write_trace(run: KernelRun, path: str):
    """Writes |run|'s modeled timeline in Chrome trace format, one track per engine."""
    engines = ["tensor", "vector", "scalar", "gpsimd", "dma"]
    events = [
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": i, "args": {"name": e}}
        for i, e in enumerate(engines)
    ]
    for api, where, engine, start, end, _done in run.timeline():
        events.append(
            {
                "name": api,
                "ph": "X",
                "pid": 0,
                "tid": engines.index(engine),
                "ts": start,
                "dur": end - start,
                "args": {"source": where},
            }
        )
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f)
