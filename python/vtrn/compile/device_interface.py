"""Dynamo's device interface for ``neuron`` (torch._dynamo.device_interface), as CUDA's
CudaInterface: Dynamo asks it for the current device, streams and events of a device type
when it traces code that uses them. Registered when the backend is first resolved."""

from __future__ import annotations

import torch
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device


class NeuronInterface(DeviceInterface):
    device = torch.neuron.device  # type: ignore[assignment]
    Event = torch.neuron.Event  # type: ignore[assignment]
    Stream = torch.neuron.Stream  # type: ignore[assignment]

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch.neuron.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch.neuron.current_device()

        @staticmethod
        def get_device_properties(device=None):
            return torch.neuron.get_device_properties(device)

    current_device = staticmethod(torch.neuron.current_device)
    set_device = staticmethod(torch.neuron.set_device)
    device_count = staticmethod(torch.neuron.device_count)
    is_available = staticmethod(torch.neuron.is_available)
    stream = staticmethod(torch.neuron.stream)
    current_stream = staticmethod(torch.neuron.current_stream)
    set_stream = staticmethod(torch.neuron.set_stream)
    synchronize = staticmethod(torch.neuron.synchronize)
    get_device_properties = staticmethod(torch.neuron.get_device_properties)

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return torch.neuron.current_stream(device_idx).stream_id

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def get_compute_capability(device=None) -> str:
        major, minor = torch.neuron.get_device_capability(device)
        return f"{major}{minor}"

    @staticmethod
    def is_triton_capable(device=None) -> bool:
        return False


def register() -> None:
    register_interface_for_device("neuron", NeuronInterface)
    for index in range(torch.neuron.device_count()):
        register_interface_for_device(f"neuron:{index}", NeuronInterface)
