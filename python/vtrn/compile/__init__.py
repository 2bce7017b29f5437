"""``torch.compile(backend="neuron")``: Dynamo graphs run as one vtrn executable each.

The backend is registered through the ``torch_dynamo_backends`` entry point, so it is known
right after ``import torch``. See docs/compile.md.

The backend (and torch._dynamo with it) loads on first use of one of its names; the
per-graph record store, ``vtrn.compile.records``, loads without it (``import torch_neuronx``
reads it).
"""

import importlib

_BACKEND_NAMES = (
    "CompileMetrics",
    "get_dynamo_metrics",
    "graph_modules",
    "neuron_backend",
    "reset_dynamo_metrics",
)

_EXPORT_NAMES = ("export_stablehlo", "exported_inputs")

__all__ = [*_BACKEND_NAMES, *_EXPORT_NAMES, "NeuronInterface"]


def __getattr__(name):
    if name in _BACKEND_NAMES:
        return getattr(importlib.import_module("vtrn.compile._backend"), name)
    if name in _EXPORT_NAMES:
        return getattr(importlib.import_module("vtrn.compile.export"), name)
    if name == "NeuronInterface":
        return importlib.import_module("vtrn.compile.device_interface").NeuronInterface
    raise AttributeError(f"module 'vtrn.compile' has no attribute {name!r}")
