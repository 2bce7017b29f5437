"""Compilation metrics of the ``neuron`` torch.compile backend, one record per compiled graph,
in TorchNeuron's shape (``NeuronCompilationMetrics``). A backend calls ``record_compilation``;
users read ``get_dynamo_metrics()`` and clear with ``reset_dynamo_metrics()``. torch._dynamo's
``counters["neuron"]`` counts the graphs, as TorchNeuron's does."""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = [
    "NeuronCompilationMetrics",
    "get_dynamo_metrics",
    "record_compilation",
    "reset_dynamo_metrics",
]

_lock = threading.Lock()
_compilation_metrics: list[NeuronCompilationMetrics] = []


@dataclass
class NeuronCompilationMetrics:
    """One compiled graph: its cache key (``graph_id``), names, size and phase times (us)."""

    graph_id: str
    graph_name: str = ""
    model_name: str = ""
    has_collectives: bool = False
    graph_node_count: int = 0
    timestamp: str = ""
    torch_neuronx_fx_passes_us: int = 0
    torch_neuronx_lower_us: int = 0
    torch_neuronx_compile_us: int = 0


def record_compilation(metrics: NeuronCompilationMetrics) -> None:
    """Records one compiled graph (called by the backend)."""
    from torch._dynamo.utils import counters

    with _lock:
        _compilation_metrics.append(metrics)
        counters["neuron"]["compiled_graphs"] += 1
        if metrics.has_collectives:
            counters["neuron"]["graphs_with_collectives"] += 1


def get_dynamo_metrics() -> list[NeuronCompilationMetrics]:
    """Every graph compiled since the last reset, in order. Waits for queued work first, as
    TorchNeuron does (compile times of queued graphs are final afterwards)."""
    import torch

    torch.neuron.synchronize()
    with _lock:
        return list(_compilation_metrics)


def reset_dynamo_metrics() -> None:
    """Forgets the recorded graphs and clears ``counters["neuron"]``."""
    from torch._dynamo.utils import counters

    with _lock:
        _compilation_metrics.clear()
        counters["neuron"].clear()
