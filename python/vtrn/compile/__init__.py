"""``torch.compile(backend="neuron")``: Dynamo graphs run as one vtrn executable each.

The backend is registered through the ``torch_dynamo_backends`` entry point, so it is known
right after ``import torch``. See docs/compile.md.
"""

from vtrn.compile._backend import (
    CompileMetrics,
    get_dynamo_metrics,
    graph_modules,
    neuron_backend,
    reset_dynamo_metrics,
)
from vtrn.compile.device_interface import NeuronInterface, register
from vtrn.compile.export import export_stablehlo, exported_inputs

register()

__all__ = [
    "CompileMetrics",
    "NeuronInterface",
    "export_stablehlo",
    "exported_inputs",
    "get_dynamo_metrics",
    "graph_modules",
    "neuron_backend",
    "reset_dynamo_metrics",
]
