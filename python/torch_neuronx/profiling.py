"""``torch_neuronx.profiling``: ``NeuronProfiler``, the Neuron runtime's system and device traces
beside PyTorch's.

vtrn has no Neuron runtime traces yet: ``NeuronProfiler`` raises NotImplementedError naming
itself when built. This module is the one to replace when it is implemented."""

from __future__ import annotations

from typing import Any

from torch_neuronx._missing import not_implemented

__all__ = ["NRTProfilerError", "NeuronProfiler"]


class NRTProfilerError(Exception):
    """An error of the Neuron runtime's profiler."""


class NeuronProfiler:
    """Coordinates the Neuron runtime's profiling with PyTorch's (TorchNeuron's signature)."""

    def __init__(
        self,
        pytorch_activities: list | None = None,
        record_shapes: bool = False,
        pytorch_trace_file: str | None = None,
        neuron_output_dir: str = "./output",
        event_filters: dict[str, Any] | None = None,
    ):
        raise not_implemented(
            "torch_neuronx.NeuronProfiler",
            "torch.profiler.profile records the PyTorch trace of a vtrn run",
        )
