"""vtrn: a software Trainium for PyTorch.

Installing vtrn gives PyTorch the ``neuron`` device. ``import torch`` loads it through the
``torch.backends`` entry point; importing vtrn first works too. Importing vtrn alone does not
import torch, so the ``vtrn`` command line stays fast.
"""

import ctypes
import os
import sys
import warnings

__version__ = "0.1.0"


def _load_onednn_with_its_own_symbols():
    """Loads oneDNN (libdnnl.so.2, which the extension modules link) with RTLD_DEEPBIND.

    libtorch_cpu.so carries its own oneDNN and exports some of its template instances, among
    them the one-time initializers of the jit GEMM kernels. Loaded after torch the usual way,
    libdnnl's calls bind to torch's copies, which initialize torch's kernel tables instead of
    libdnnl's: every matmul that oneDNN runs through its jit GEMM (all float32 matmuls on a CPU
    without AVX-512) then fails with "unimplemented". DEEPBIND makes libdnnl resolve its own
    symbols first. A missing library is left for the extension import to report.
    """
    try:
        ctypes.CDLL("libdnnl.so.2", mode=os.RTLD_DEEPBIND | os.RTLD_NOW)
    except OSError:
        pass


_load_onednn_with_its_own_symbols()

__all__ = [
    "clear_op_tracking",
    "clock",
    "get_executed_ops",
    "get_fallback_ops",
    "metrics",
    "register",
    "reset_clock",
    "reset_metrics",
]


def register():
    """Registers the ``neuron`` device with PyTorch (imports torch). Safe to call again."""
    from vtrn import _backend

    _backend.register()


_autoload_failed = False


def _autoload():
    """Entry point of the ``torch.backends`` group, called at the end of ``import torch``.

    It never raises: a failure would make every ``import torch`` in this environment fail, so
    it warns once with the reason instead and leaves torch usable without the device.
    """
    global _autoload_failed
    if _autoload_failed:
        return
    try:
        register()
    except Exception as err:  # noqa: BLE001 - any failure must leave `import torch` working
        _autoload_failed = True
        reason = str(err).rstrip(".")
        warnings.warn(
            f"vtrn could not register the 'neuron' device: {type(err).__name__}: {reason}. "
            "torch works without it; reinstall vtrn (`make setup`) or set "
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0 to skip loading it.",
            RuntimeWarning,
            stacklevel=2,
        )


def get_fallback_ops():
    """Sorted names of the ATen ops that ran through the CPU fallback since the last clear."""
    register()
    from vtrn import _C

    return _C.get_fallback_ops()


def get_executed_ops():
    """Sorted names of every ATen op that ran on a neuron device since the last clear."""
    register()
    from vtrn import _C

    return _C.get_executed_ops()


def clear_op_tracking():
    """Forgets the recorded ops, so each op warns again on its next fallback."""
    register()
    from vtrn import _C

    _C.clear_op_tracking()


if "torch" in sys.modules:
    # torch is already imported (or is importing us as its backend): register now, so that
    # `import vtrn` works even with TORCH_DEVICE_BACKEND_AUTOLOAD=0.
    _autoload()


def metrics():
    """Counters of the eager path since the process started (or reset_metrics()).

    ``compiles``: executables compiled; ``memory_cache_hits``: ops that found their executable
    in memory; ``disk_cache_hits``: executables loaded from TORCH_NEURONX_NEFF_CACHE_DIR;
    ``executed_kernels``: executables run (a fused group counts once); ``fused_groups`` and
    ``fused_ops``: Adaptive Eager Execution groups and the ops inside them; ``fallbacks``: op
    calls that ran through the CPU fallback; ``skipped_kernels``: executables compile-only mode
    compiled but did not run; ``modeled_device_time_us``: the modeled Trainium time of the
    executed kernels, in microseconds; ``planned_scratch_bytes``: the executed executables'
    planned peak host scratch (intermediates sharing buffers when their lifetimes do not
    overlap), summed; ``intermediate_bytes``: the same executables' intermediates without
    reuse, summed.
    """
    register()
    from vtrn import _C

    return dict(_C._metrics())


def reset_metrics():
    """Sets every counter of metrics() back to zero."""
    register()
    from vtrn import _C

    _C._reset_metrics()


def clock(device=None, reset: bool = False) -> dict:
    """The modeled device clock of a neuron device (the current one by default).

    Each stream has a timeline that kernels advance by their modeled time (plus a launch
    overhead each), copies by the DMA and host-transfer model, and collectives by their modeled
    time; event waits and ``wait_stream`` join timelines, and the host's synchronizations
    (``torch.neuron.synchronize()``, ``.cpu()``, ``.item()``) hold later work back.

    Returns ``{"origin_us", "end_us", "span_us", "streams": {stream_id: {"busy_us": {engine:
    us}, "busy_total_us", "idle_us", "end_us"}}}`` since the last reset: ``busy_us`` by engine
    class (``tensor``, ``vector``, ``scalar``, ``gpsimd``, ``dma``, ``collective``) and
    ``idle_us``, the device's span minus the stream's busy time. ``reset=True`` starts a new
    span after reading this one.
    """
    register()
    import torch

    from vtrn import _C

    index = torch.neuron._device_index(device)
    out = dict(_C._clock(index))
    if reset:
        _C._reset_clock(index)
    return out


def reset_clock(device=None) -> None:
    """Starts a new span of ``clock()`` at the device's current modeled time."""
    register()
    import torch

    from vtrn import _C

    _C._reset_clock(torch.neuron._device_index(device))
