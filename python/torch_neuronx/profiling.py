"""``torch_neuronx.profiling``: ``NeuronProfiler``, TorchNeuron's profiler that runs the Neuron
runtime's device trace beside PyTorch's.

On vtrn the device trace is the modeled one: the profiler runs ``torch.profiler.profile`` with
``ProfilerActivity.PrivateUse1`` (every device kernel, copy and collective at its modeled time,
linked to its ATen op) plus the ``pytorch_activities`` asked for, and writes the Chrome trace
into ``neuron_output_dir``: ``pytorch_trace_file`` (default ``pytorch_trace.json``) when
PyTorch activities were asked for, else ``neuron_device_trace.json``. vtrn has no Neuron runtime
event types, so ``event_filters``' ``types`` select nothing; its ``nc`` entries are checked."""

from __future__ import annotations

import logging
import os
from typing import Any

from torch.profiler import ProfilerActivity, profile

__all__ = ["NRTProfilerError", "NeuronProfiler"]

logger = logging.getLogger(__name__)

DEVICE_TRACE_FILE = "neuron_device_trace.json"


class NRTProfilerError(Exception):
    """An error of the Neuron runtime's profiler."""


def _parse_cores(specs) -> list[int]:
    """``['0', '4-7']`` -> ``[0, 4, 5, 6, 7]``, as TorchNeuron reads the ``nc`` filter."""
    cores: set[int] = set()
    for spec in specs:
        text = str(spec).strip()
        try:
            first, _, last = text.partition("-")
            lo, hi = int(first), int(last or first)
        except ValueError:
            raise ValueError(
                f"NeuronProfiler: event_filters['nc'] entry {spec!r} is not a core id or an "
                "inclusive range such as '4-7'"
            ) from None
        if lo > hi:
            raise ValueError(f"NeuronProfiler: event_filters['nc'] range {text!r} has start > end")
        cores.update(range(lo, hi + 1))
    return sorted(cores)


class NeuronProfiler:
    """Coordinates the device trace with PyTorch's profiler (TorchNeuron's signature); a context
    manager, or ``start()`` / ``stop()``."""

    def __init__(
        self,
        pytorch_activities: list | None = None,
        record_shapes: bool = False,
        pytorch_trace_file: str | None = None,
        neuron_output_dir: str = "./output",
        event_filters: dict[str, Any] | None = None,
    ):
        self.pytorch_activities = list(pytorch_activities or [])
        self.record_shapes = record_shapes
        self.neuron_output_dir = neuron_output_dir
        if self.pytorch_activities:
            name = pytorch_trace_file or "pytorch_trace.json"
            self.pytorch_trace_file = os.path.join(neuron_output_dir, name)
        else:
            self.pytorch_trace_file = None
        self.event_filters = dict(event_filters or {})
        unknown = sorted(set(self.event_filters) - {"nc", "types"})
        if unknown:
            raise ValueError(
                f"NeuronProfiler: unknown event_filters keys {unknown}; the filters are 'nc' "
                "(NeuronCore ids or ranges) and 'types' (runtime event types)"
            )
        self.cores = _parse_cores(self.event_filters.get("nc", []))
        if self.event_filters.get("types"):
            logger.warning(
                "NeuronProfiler: vtrn's device trace has no Neuron runtime event types; "
                "event_filters['types'] %s select nothing",
                self.event_filters["types"],
            )
        self._profiler = None
        self._active = False

    def _trace_path(self) -> str:
        return self.pytorch_trace_file or os.path.join(self.neuron_output_dir, DEVICE_TRACE_FILE)

    def start(self):
        """Starts profiling."""
        if self._active:
            raise RuntimeError("Profiler is already active")
        activities = {ProfilerActivity.PrivateUse1, *self.pytorch_activities}
        self._profiler = profile(activities=list(activities), record_shapes=self.record_shapes)
        self._profiler.__enter__()
        self._active = True

    def stop(self):
        """Stops profiling and writes the trace into ``neuron_output_dir``."""
        if not self._active:
            raise RuntimeError("Profiler is not active")
        self._active = False
        self._profiler.__exit__(None, None, None)
        os.makedirs(self.neuron_output_dir, exist_ok=True)
        self._profiler.export_chrome_trace(self._trace_path())

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def is_active(self) -> bool:
        return self._active

    def has_pytorch_profiling(self) -> bool:
        return bool(self.pytorch_activities)

    @property
    def profiler(self):
        """The ``torch.profiler.profile`` behind it (``key_averages()``, ``events()``)."""
        return self._profiler

    def get_pytorch_trace(self) -> str | None:
        if self._profiler is not None and not self._active:
            return str(self._profiler)
        return None

    def get_nrt_output_directory(self) -> str:
        return self.neuron_output_dir

    def export_pytorch_trace(self, filename: str):
        """Writes the trace again, to ``filename``."""
        if self._profiler is None:
            raise ValueError("PyTorch profiling not enabled or not started")
        if self._active:
            raise ValueError("Cannot export trace while profiling is active")
        self._profiler.export_chrome_trace(filename)
