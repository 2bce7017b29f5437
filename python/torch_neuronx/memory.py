"""``torch_neuronx.memory``: TorchNeuron's memory API over vtrn's allocator.

``memory_stats`` returns TorchNeuron's nested shape (``stats["allocated_bytes"]["current"]``),
built from the allocator's CUDA-style flat stats (``torch.neuron.memory_stats()``); the other
functions return what their ``torch.neuron`` namesakes do."""

from __future__ import annotations

from typing import Any

import torch

from vtrn.neuron import memory as _memory
from vtrn.neuron.devices import _device_index

__all__ = [
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
]

_FIELDS = ("current", "peak", "allocated", "freed")


def memory_stats(device: int | torch.device | None = None) -> dict[str, Any]:
    """``allocated_bytes``, ``reserved_bytes``, ``active_bytes`` (each with current, peak,
    allocated and freed), ``num_alloc_retries``, ``num_ooms``, ``num_tensor_frees`` and
    ``allocation_requests`` of ``device`` (default: the current device)."""
    flat = _memory.memory_stats(_device_index(device))

    def stat(key: str) -> dict[str, int]:
        return {field: int(flat.get(f"{key}.all.{field}", 0)) for field in _FIELDS}

    return {
        "allocated_bytes": stat("allocated_bytes"),
        "reserved_bytes": stat("reserved_bytes"),
        "active_bytes": stat("active_bytes"),
        "num_alloc_retries": int(flat.get("num_alloc_retries", 0)),
        "num_ooms": int(flat.get("num_ooms", 0)),
        "num_tensor_frees": int(flat.get("allocation.all.freed", 0)),
        "allocation_requests": int(flat.get("allocation.all.allocated", 0)),
    }


def memory_allocated(device: int | torch.device | None = None) -> int:
    return _memory.memory_allocated(_device_index(device))


def max_memory_allocated(device: int | torch.device | None = None) -> int:
    return _memory.max_memory_allocated(_device_index(device))


def memory_reserved(device: int | torch.device | None = None) -> int:
    return _memory.memory_reserved(_device_index(device))


def max_memory_reserved(device: int | torch.device | None = None) -> int:
    return _memory.max_memory_reserved(_device_index(device))


def reset_peak_memory_stats(device: int | torch.device | None = None) -> None:
    _memory.reset_peak_memory_stats(_device_index(device))


def reset_accumulated_memory_stats(device: int | torch.device | None = None) -> None:
    _memory.reset_accumulated_memory_stats(_device_index(device))


def memory_summary(device: int | torch.device | None = None, abbreviated: bool = False) -> str:
    return _memory.memory_summary(_device_index(device), abbreviated)
