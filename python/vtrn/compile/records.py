"""The per-graph compilation records of the ``neuron`` torch.compile backend, in TorchNeuron's
shape (``NeuronCompilationMetrics``): the backend calls ``record_compilation`` once per AOT graph
it compiles; ``torch_neuronx.neuron_dynamo_backend`` re-exports this store under TorchNeuron's
names (``get_dynamo_metrics()`` returns the records, ``reset_dynamo_metrics()`` clears them).
torch._dynamo's ``counters["neuron"]`` counts the graphs, as TorchNeuron's does. Imports nothing
heavy: ``import torch_neuronx`` loads it."""

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
    """One compiled graph: its cache key (``graph_id``), names, size and phase times (us).

    ``planned_scratch_bytes``: the planned peak host scratch of the executables the graph's
    first run executed (each executable's intermediates share buffers when their lifetimes do
    not overlap; summed over the executables, usually one); ``intermediate_bytes``: the same
    intermediates without reuse (what a run held before buffer assignment)."""

    graph_id: str
    graph_name: str = ""
    model_name: str = ""
    has_collectives: bool = False
    graph_node_count: int = 0
    timestamp: str = ""
    torch_neuronx_fx_passes_us: int = 0
    torch_neuronx_lower_us: int = 0
    torch_neuronx_compile_us: int = 0
    planned_scratch_bytes: int = 0
    intermediate_bytes: int = 0


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
