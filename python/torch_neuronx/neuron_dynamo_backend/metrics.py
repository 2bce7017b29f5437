"""Compilation metrics of the ``neuron`` torch.compile backend, one record per compiled graph,
in TorchNeuron's shape (``NeuronCompilationMetrics``). The store is vtrn's
(``vtrn.compile.records``): the backend records every graph it compiles there, and this module
is TorchNeuron's name for it."""

from vtrn.compile.records import (
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
