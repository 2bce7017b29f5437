"""Where PyTorch code written for CUDA reaches a device list that leaves ``neuron`` out.

Two hooks, installed when the device registers:

- ``torch.compile`` with its default backend (Inductor) on a graph whose tensors are on
  ``neuron`` compiles it with the neuron backend, as TorchNeuron does: its torch.compile
  reference says ``backend='neuron'`` is selected automatically on a Neuron device, and
  TorchNeuron does not use Inductor. Inductor's options (``options={...}`` meant for its code
  generators) do not apply to that backend and are not passed on. Graphs on other devices go
  to Inductor unchanged.
- FlexAttention's eager device check (``torch.nn.attention.flex_attention``) accepts
  ``neuron`` as it accepts CUDA, backward included: the attention runs through its dense
  implementation, forward and backward, on the device's own ops.

Neither hook imports ``torch._dynamo`` or ``vtrn.compile`` until a graph is compiled.
"""

from __future__ import annotations

import functools

import torch

DEVICE_TYPE = "neuron"


def _on_neuron(gm, example_inputs) -> bool:
    for x in example_inputs:
        if isinstance(x, torch.Tensor) and x.device.type == DEVICE_TYPE:
            return True
    for node in getattr(getattr(gm, "graph", None), "nodes", ()):
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor) and value.device.type == DEVICE_TYPE:
            return True
    return False


def _redirect_default_backend() -> None:
    wrapper = torch._TorchCompileInductorWrapper
    if getattr(wrapper.__call__, "_vtrn_redirect", False):
        return
    inductor_call = wrapper.__call__

    @functools.wraps(inductor_call)
    def __call__(self, model_, inputs_):
        if _on_neuron(model_, inputs_):
            from vtrn.compile import neuron_backend

            return neuron_backend(model_, inputs_)
        return inductor_call(self, model_, inputs_)

    __call__._vtrn_redirect = True
    wrapper.__call__ = __call__


def _allow_flex_attention() -> None:
    from torch.nn.attention import flex_attention

    check = flex_attention._validate_device
    if getattr(check, "_vtrn_neuron", False):
        return

    @functools.wraps(check)
    def _validate_device(query, key, value):
        if query.device.type == DEVICE_TYPE:
            return None
        return check(query, key, value)

    _validate_device._vtrn_neuron = True
    flex_attention._validate_device = _validate_device


def install() -> None:
    _redirect_default_backend()
    _allow_flex_attention()
