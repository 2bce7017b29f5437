"""Device memory: the allocator is a c10::DeviceAllocator, so torch.accelerator reads its
stats; ``memory_summary`` prints them in the shape of torch.cuda.memory_summary."""

from __future__ import annotations

import torch

from vtrn.neuron.devices import _device_index, get_device_properties
from vtrn.render.units import format_bytes


def memory_stats(dev=None) -> dict:
    return torch.accelerator.memory_stats(_device_index(dev))


def memory_allocated(dev=None) -> int:
    return torch.accelerator.memory_allocated(_device_index(dev))


def max_memory_allocated(dev=None) -> int:
    return torch.accelerator.max_memory_allocated(_device_index(dev))


def memory_reserved(dev=None) -> int:
    return torch.accelerator.memory_reserved(_device_index(dev))


def max_memory_reserved(dev=None) -> int:
    return torch.accelerator.max_memory_reserved(_device_index(dev))


def reset_peak_memory_stats(dev=None) -> None:
    torch.accelerator.reset_peak_memory_stats(_device_index(dev))


def reset_accumulated_memory_stats(dev=None) -> None:
    torch.accelerator.reset_accumulated_memory_stats(_device_index(dev))


def empty_cache() -> None:
    """Releases every cached block that no tensor uses."""
    torch.accelerator.empty_cache()


def mem_get_info(dev=None) -> tuple:
    """(free, total) bytes of the device's HBM bank."""
    return torch._C._accelerator_getMemoryInfo(_device_index(dev))


def _format_size(n: int) -> str:
    """A cell of memory_summary: two decimals, right-aligned like torch.cuda's."""
    text = format_bytes(n, decimals=2)
    return f"{text + ' ' if text.endswith(' B') else text:>11}"


def memory_summary(dev=None, abbreviated: bool = False) -> str:
    """A table of the device's allocator stats, in the shape of torch.cuda.memory_summary."""
    index = _device_index(dev)
    stats = memory_stats(index)
    props = get_device_properties(index)
    rows = [
        ("Allocated memory", "allocated_bytes.all", True),
        ("Requested memory", "requested_bytes.all", True),
        ("Reserved memory", "reserved_bytes.all", True),
        ("Allocations", "allocation.all", False),
        ("Segments", "segment.all", False),
    ]
    width = 75
    lines = [
        "=" * width,
        f" neuron memory summary, device neuron:{index} ({props.name})".ljust(width),
        f" HBM budget {_format_size(props.total_memory).strip()}, OOMs {stats.get('num_ooms', 0)},"
        f" cache flushes {stats.get('num_alloc_retries', 0)}".ljust(width),
        "-" * width,
        f"{'Metric':<22}| {'Cur Usage':>11} | {'Peak Usage':>11} | {'Tot Alloc':>11} | {'Tot Freed':>11}",
        "-" * width,
    ]
    for label, key, is_bytes in rows:
        values = [stats.get(f"{key}.{k}", 0) for k in ("current", "peak", "allocated", "freed")]
        cells = [_format_size(v) if is_bytes else f"{v:11d}" for v in values]
        lines.append(f"{label:<22}| " + " | ".join(f"{c:>11}" for c in cells))
    lines.append("=" * width)
    return "\n".join(lines) + "\n"
