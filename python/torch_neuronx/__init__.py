"""``torch_neuronx``: TorchNeuron's Python API on vtrn.

Scripts and libraries written for TorchNeuron import ``torch_neuronx`` (HF accelerate and
transformers detect Trainium by finding it), so vtrn installs a package of that name. Its
functions keep TorchNeuron's names, signatures and errors and run on vtrn (``vtrn`` and
``torch.neuron``, which stay vtrn's own API; ``nki_op`` and ``wrap_nki`` come from vtrn's ``nki``
package). TorchNeuron features vtrn does not have yet (``compiler.compile_only``) exist and raise
NotImplementedError naming themselves when used.

Importing it loads torch and registers the ``neuron`` device, as ``import torch`` already does.
"""

from __future__ import annotations

import torch

import vtrn

vtrn.register()

from torch_neuronx import compiler, distributed, metrics, neuron, profiling  # noqa: E402
from torch_neuronx.memory import (  # noqa: E402
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from torch_neuronx.neuron_dynamo_backend.metrics import (  # noqa: E402
    get_dynamo_metrics,
    reset_dynamo_metrics,
)
from torch_neuronx.nki_hop import nki_op, wrap_nki  # noqa: E402
from torch_neuronx.profiling import NeuronProfiler  # noqa: E402
from torch_neuronx.streams import Event, Stream  # noqa: E402
from vtrn.neuron import devices as _devices  # noqa: E402
from vtrn.neuron import streams as _streams  # noqa: E402

__version__ = vtrn.__version__

__all__ = [
    "Event",
    "NeuronProfiler",
    "Stream",
    "StreamContext",
    "clear_op_tracking",
    "compiler",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "distributed",
    "empty_cache",
    "get_device_properties",
    "get_dynamo_metrics",
    "get_executed_ops",
    "get_fallback_ops",
    "is_neuron_runtime_initialized",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "metrics",
    "neuron",
    "nki_op",
    "profiling",
    "reset_accumulated_memory_stats",
    "reset_dynamo_metrics",
    "reset_peak_memory_stats",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
    "wrap_nki",
]

# Device memory is host memory: a forked child inherits a usable device (TorchNeuron's flag).
_is_in_bad_fork = False


def _lazy_init() -> None:
    """Initializes the device (raises the configuration error, if any)."""
    _devices._lazy_init()


def is_neuron_runtime_initialized() -> bool:
    return _devices.is_initialized()


def device_count() -> int:
    """Logical NeuronCores this process sees."""
    return _devices.device_count()


def current_device() -> int:
    return _devices.current_device()


def set_device(device: int) -> None:
    """Makes ``device`` (an index) the current device. An index this process does not see
    raises what ``torch.neuron.set_device`` raises: RuntimeError, as CUDA's invalid device
    ordinal, naming the index and the devices there are."""
    _devices.set_device(int(device))


def _get_device_index(device, optional: bool = False, allow_cpu: bool = False):
    if device is None and optional:
        return None
    if not isinstance(device, (type(None), str, torch.device, int)):
        raise ValueError(f"Invalid device specification: {device}")
    return _devices._device_index(device)


def get_device_properties(device):
    """Name, ``total_memory`` (the HBM bank's bytes) and the core of ``device``."""
    return _devices.get_device_properties(_get_device_index(device))


def empty_cache() -> None:
    """Releases every cached block that no tensor uses."""
    torch.neuron.empty_cache()


def get_fallback_ops() -> list:
    """Names of the ops that ran on the CPU instead of the device since the last clear."""
    return vtrn.get_fallback_ops()


def get_executed_ops() -> list:
    """Names of the ops that ran on the device since the last clear."""
    return vtrn.get_executed_ops()


def clear_op_tracking() -> None:
    """Forgets both lists (and each op warns again on its next fallback)."""
    vtrn.clear_op_tracking()


def synchronize(device=None) -> None:
    """Waits for the work queued on every stream of ``device`` (default: the current one)."""
    _devices.synchronize(_get_device_index(device))


def current_stream(device=None) -> Stream:
    return _streams.current_stream(_get_device_index(device))


def default_stream(device=None) -> Stream:
    return _streams.default_stream(_get_device_index(device))


def set_stream(stream: Stream) -> None:
    if stream is not None:
        _streams.set_stream(stream)


class device:  # noqa: N801 - TorchNeuron's name
    """Context manager that makes ``device`` current and restores the previous one."""

    def __init__(self, device):
        self.idx = _get_device_index(device)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = current_device()
        if self.prev_idx != self.idx:
            set_device(self.idx)

    def __exit__(self, exc_type, exc, tb):
        if self.prev_idx != self.idx:
            set_device(self.prev_idx)
        return False


StreamContext = _streams.StreamContext


def stream(stream) -> StreamContext:
    """Context manager that makes ``stream`` current on its device."""
    return StreamContext(stream)
