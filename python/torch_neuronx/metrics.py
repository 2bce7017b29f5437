"""``torch_neuronx.metrics``: TorchNeuron's counters API over ``vtrn.metrics()``.

Counters that TorchNeuron has carry its names (``CompilationCache.InMemoryHits``,
``CompilationCache.PersistentHits``, ``CompilationCache.TotalCompilations``); vtrn's others
carry a ``vtrn.`` prefix. vtrn always counts, so ``set_enabled(False)`` is not available."""

from __future__ import annotations

from typing import Any

import vtrn
from torch_neuronx._missing import not_implemented

__all__ = [
    "clear_all",
    "clear_counters",
    "clear_metrics",
    "get_compilation_metrics",
    "get_counter_names",
    "get_counter_value",
    "get_metric_data",
    "get_metric_names",
    "is_enabled",
    "report",
    "report_filtered",
    "set_enabled",
]

# vtrn.metrics() key -> counter name
_COUNTERS = {
    "memory_cache_hits": "CompilationCache.InMemoryHits",
    "disk_cache_hits": "CompilationCache.PersistentHits",
    "compiles": "CompilationCache.TotalCompilations",
    "executed_kernels": "vtrn.ExecutedKernels",
    "fused_groups": "vtrn.FusedGroups",
    "fused_ops": "vtrn.FusedOps",
    "fallbacks": "vtrn.Fallbacks",
    "skipped_kernels": "vtrn.SkippedKernels",
    "modeled_device_time_us": "vtrn.ModeledDeviceTimeUs",
    "planned_scratch_bytes": "vtrn.PlannedScratchBytes",
    "intermediate_bytes": "vtrn.IntermediateBytes",
}


def _counters() -> dict[str, int]:
    values = vtrn.metrics()
    return {name: int(values.get(key, 0)) for key, name in _COUNTERS.items()}


def is_enabled() -> bool:
    """True: vtrn's counters are always on."""
    return True


def set_enabled(enabled: bool) -> None:
    if not enabled:
        raise not_implemented(
            "torch_neuronx.metrics.set_enabled(False)",
            "vtrn always counts; read the counters around the region instead",
        )


def get_counter_names() -> list[str]:
    """Names of the counters that have counted something."""
    return [name for name, value in _counters().items() if value]


def get_counter_value(name: str) -> int | None:
    """The counter's value, or None for a name that is not a counter."""
    return _counters().get(name)


def get_metric_names() -> list[str]:
    """Names of the timed metrics: vtrn keeps counters only."""
    return []


def get_metric_data(name: str) -> dict[str, Any] | None:
    return None


def _report(names) -> str:
    counters = _counters()
    lines = []
    for name in names:
        lines += [f"Counter: {name}", f"  Value: {counters[name]}"]
    return "\n".join(lines) + ("\n" if lines else "")


def report() -> str:
    """Every counter that counted, as ``Counter: NAME`` / ``  Value: N`` lines."""
    return _report(get_counter_names())


def report_filtered(
    counter_names: list[str] | None = None, metric_names: list[str] | None = None
) -> str:
    counters = _counters()
    return _report([name for name in counter_names or [] if name in counters])


def clear_counters() -> None:
    vtrn.reset_metrics()


def clear_metrics() -> None:
    """Clears the timed metrics: vtrn has none."""


def clear_all() -> None:
    clear_counters()
    clear_metrics()


def get_compilation_metrics() -> dict[str, Any]:
    """The compilation counters (names containing ``Compilation``) that counted."""
    counters = _counters()
    return {name: counters[name] for name in get_counter_names() if "Compilation" in name}
