"""Streams and events: thin subclasses of torch.Stream / torch.Event, which reach the device
through its DeviceGuard."""

from __future__ import annotations

import torch

from vtrn import _C
from vtrn.neuron.devices import _device_index, current_device

_PRIVATEUSE1_TYPE = 20  # c10::DeviceType::PrivateUse1, as torch.Stream.device_type reports it


class Stream(torch.Stream):
    """An in-order queue of work on a neuron device. Work on two streams is ordered only by
    events (``wait_stream``, ``wait_event``).

    As ``torch.cuda.Stream``, a new stream is the next of a pool of 32 per priority and device,
    handed out round-robin: the 33rd new stream of a priority is the first one again."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # rebuilt from (stream_id, device_index, device_type)
            return super().__new__(cls, **kwargs)
        index = _device_index(device)
        return super().__new__(cls, device=torch.device("neuron", index), priority=priority)

    def __repr__(self):
        return f"<torch.neuron.Stream device=neuron:{self.device_index} id={self.stream_id}>"

    @property
    def priority(self) -> int:
        """The stream's priority: 0 (the default) down to -3 (the highest), as on CUDA."""
        return _C._stream_priority(self.stream_id)

    @staticmethod
    def priority_range() -> tuple:
        """(lowest, highest) priority a stream can have; others are clamped into it."""
        return tuple(_C._stream_priority_range())


def _as_neuron_stream(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


class _NeuronEventMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Event) and obj.device.type == "neuron"


class Event(metaclass=_NeuronEventMeta):
    """Marks a point in a stream's work; ``elapsed_time`` measures between two of them.

    ``elapsed_time`` is modeled device time: the milliseconds the work between the two records
    would take on Trainium (``vtrn.clock()`` explains it per stream and engine).
    ``torch.neuron.wall_elapsed_time(start, end)`` gives the host's wall-clock milliseconds
    between the two events' completion instead.

    ``torch.neuron.Event(...)`` builds a ``torch.Event`` on the neuron device: torch.Event's
    methods accept only torch.Event itself, not subclasses, so this is a factory whose
    isinstance check matches every neuron torch.Event."""

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ):
        return torch.Event(
            device=torch.device("neuron", current_device()),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )


def wall_elapsed_time(start: torch.Event, end: torch.Event) -> float:
    """Wall-clock milliseconds between the completion of ``start`` and of ``end`` on this host
    (``end.elapsed_time`` is modeled device time). Both must be recorded and completed."""
    for name, e in (("start", start), ("end", end)):
        if not isinstance(e, torch.Event) or e.device.type != "neuron":
            raise TypeError(
                f"wall_elapsed_time: {name} must be a neuron torch.Event, got {type(e).__name__}"
                f"{'' if not isinstance(e, torch.Event) else ' on ' + str(e.device)}; "
                "make it with torch.neuron.Event(enable_timing=True)."
            )
    return _C._event_wall_elapsed_ms(start.event_id, end.event_id)


def current_stream(dev=None) -> Stream:
    return _as_neuron_stream(torch.accelerator.current_stream(_device_index(dev)))


def default_stream(dev=None) -> Stream:
    index = _device_index(dev)
    return Stream(stream_id=0, device_index=index, device_type=_PRIVATEUSE1_TYPE)


def set_stream(s: torch.Stream) -> None:
    torch.accelerator.set_stream(s)


class StreamContext:
    """Makes ``s`` the current stream of its device inside a ``with`` block."""

    def __init__(self, s):
        self.stream = s
        self.previous = None

    def __enter__(self):
        if self.stream is not None:
            self.previous = torch.accelerator.current_stream(self.stream.device_index)
            torch.accelerator.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.previous is not None:
            torch.accelerator.set_stream(self.previous)
        return False


def stream(s) -> StreamContext:
    return StreamContext(s)


def _sleep(seconds: float, dev=None) -> None:
    """Queues work that takes ``seconds`` on the current stream (a test hook, as torch.cuda._sleep)."""
    _C._sleep(_device_index(dev), float(seconds))
