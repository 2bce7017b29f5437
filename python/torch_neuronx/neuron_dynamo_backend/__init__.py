"""``torch_neuronx.neuron_dynamo_backend``: the ``neuron`` torch.compile backend's helpers.

vtrn has no ``neuron`` torch.compile backend yet; its compilation metrics
(``get_dynamo_metrics``) are here, empty until a backend records graphs."""

from torch_neuronx.neuron_dynamo_backend.metrics import (
    NeuronCompilationMetrics,
    get_dynamo_metrics,
    record_compilation,
    reset_dynamo_metrics,
)

__all__ = [
    "NeuronCompilationMetrics",
    "get_dynamo_metrics",
    "record_compilation",
    "reset_dynamo_metrics",
]
