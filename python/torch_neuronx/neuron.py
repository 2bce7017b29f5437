"""``torch_neuronx.neuron``: the device module that is ``torch.neuron`` (vtrn's), with the
names TorchNeuron's adds: ``wait_stream``, ``wait_event``, ``record_event``, ``query``,
``get_dynamo_metrics``, ``reset_dynamo_metrics`` and the ``memory`` submodule."""

from torch_neuronx import memory
from torch_neuronx.neuron_dynamo_backend.metrics import get_dynamo_metrics, reset_dynamo_metrics
from vtrn.neuron import *  # noqa: F403 - the device module's public names
from vtrn.neuron import __all__ as _device_names
from vtrn.neuron import current_stream

__all__ = [
    *_device_names,
    "get_dynamo_metrics",
    "memory",
    "query",
    "record_event",
    "reset_dynamo_metrics",
    "wait_event",
    "wait_stream",
]


def wait_stream(stream) -> None:
    """Makes the current stream wait for the work queued on ``stream`` so far."""
    current_stream().wait_stream(stream)


def wait_event(event) -> None:
    """Makes the current stream wait for ``event``."""
    current_stream().wait_event(event)


def record_event(event=None):
    """Records ``event`` (a new one if None) on the current stream and returns it."""
    return current_stream().record_event(event)


def query() -> bool:
    """True when all the work queued on the current stream has completed."""
    return current_stream().query()
