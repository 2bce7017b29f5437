"""``torch.neuron``: the device module of the ``neuron`` device, shaped like ``torch.cuda``."""

import contextlib
import threading
import warnings
from dataclasses import dataclass

import torch

from vtrn import _C

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_amp_supported_dtype",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]

_initialized = False
_init_lock = threading.Lock()

#
# Devices
#


def is_available() -> bool:
    """True when the environment names a valid instance and at least one visible core."""
    return device_count() > 0


def device_count() -> int:
    """Logical NeuronCores this process sees (NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES)."""
    return _C.device_count()


def _lazy_init():
    global _initialized
    with _init_lock:
        if _initialized:
            return
        error = _C.config_error()
        if error:
            raise RuntimeError(f"The neuron device is unavailable: {error}")
        _initialized = True


init = _lazy_init


def is_initialized() -> bool:
    return _initialized


def _is_in_bad_fork() -> bool:
    # Device memory is host memory: a forked child inherits a usable device.
    return False


def _device_index(dev) -> int:
    """The index named by an int, a ``neuron[:i]`` string or torch.device; None = current."""
    if dev is None:
        return current_device()
    if isinstance(dev, str):
        dev = torch.device(dev)
    if isinstance(dev, torch.device):
        if dev.type != "neuron":
            raise ValueError(f"Expected neuron device, got {dev.type}")
        return current_device() if dev.index is None else dev.index
    if isinstance(dev, int):
        return dev
    raise TypeError(f"Expected an int, a str or a torch.device naming a neuron device, got {dev!r}")


def current_device() -> int:
    return _C.current_device()


def set_device(dev) -> None:
    """Makes ``dev`` the current device of the calling thread."""
    _C.set_device(_device_index(dev))


@contextlib.contextmanager
def device(dev):
    """Context manager that makes ``dev`` current and restores the previous device."""
    previous = current_device()
    set_device(dev)
    try:
        yield
    finally:
        _C.set_device(previous)


def synchronize(dev=None) -> None:
    """Waits for all work queued on every stream of ``dev`` (default: the current device).

    An error raised by queued work surfaces here, naming the op that failed.
    """
    _C.synchronize(_device_index(dev))


@dataclass(frozen=True)
class _NeuronDeviceProperties:
    name: str
    total_memory: int
    logical_cores_per_chip: int
    lnc: int
    instance: str
    core: int

    def __repr__(self):
        return (
            f"_NeuronDeviceProperties(name='{self.name}', total_memory={self.total_memory // 2**20}MB, "
            f"logical_cores_per_chip={self.logical_cores_per_chip}, lnc={self.lnc}, "
            f"instance='{self.instance}', core={self.core})"
        )


def get_device_properties(dev=None) -> _NeuronDeviceProperties:
    """Name, HBM budget (``total_memory``), logical cores per chip and LNC of ``dev``."""
    index = _device_index(dev)
    _C.set_device(current_device())  # raises the configuration error, if any
    if not 0 <= index < device_count():
        _C.set_device(index)  # raises the same error set_device would
    config = _C.config()
    return _NeuronDeviceProperties(
        name=_device_name(config),
        total_memory=config["bank_bytes"],
        logical_cores_per_chip=config["logical_cores_per_chip"],
        lnc=config["lnc"],
        instance=config["instance"],
        core=config["visible_cores"][index],
    )


def _device_name(config) -> str:
    suffix = f", LNC{config['lnc']}" if config["lnc"] else ""
    return f"{config['chip']} {config['core']} ({config['instance']}{suffix})"


def get_device_name(dev=None) -> str:
    return get_device_properties(dev).name


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is Trainium's training baseline."""
    return True


def get_amp_supported_dtype() -> list:
    return [torch.bfloat16, torch.float16, torch.float32]


#
# Streams and events: thin subclasses of torch.Stream / torch.Event, which reach the
# device through its DeviceGuard.
#


_PRIVATEUSE1_TYPE = 20  # c10::DeviceType::PrivateUse1, as torch.Stream.device_type reports it


class Stream(torch.Stream):
    """An in-order queue of work on a neuron device. Work on two streams is ordered only by
    events (``wait_stream``, ``wait_event``)."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # rebuilt from (stream_id, device_index, device_type)
            return super().__new__(cls, **kwargs)
        index = _device_index(device)
        return super().__new__(cls, device=torch.device("neuron", index), priority=priority)

    def __repr__(self):
        return f"<torch.neuron.Stream device=neuron:{self.device_index} id={self.stream_id}>"


def _as_neuron_stream(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


class _NeuronEventMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Event) and obj.device.type == "neuron"


class Event(metaclass=_NeuronEventMeta):
    """Marks a point in a stream's work; ``elapsed_time`` measures between two of them.

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


#
# Memory: the allocator is a c10::DeviceAllocator, so torch.accelerator reads its stats.
#


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
    for unit in ("B ", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:7.0f} {unit}" if unit == "B " else f"{n:7.2f} {unit}"
        n /= 1024
    return str(n)


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


#
# Random numbers: one Philox generator per device; state = 16 bytes (seed, offset).
#


def manual_seed(seed: int) -> None:
    """Seeds the default generator of the current device."""
    _C.manual_seed(current_device(), int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def manual_seed_all(seed: int) -> None:
    """Seeds the default generator of every device."""
    for index in range(device_count()):
        _C.manual_seed(index, int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def seed() -> int:
    """Seeds the current device's generator with a random number and returns it."""
    value = torch.randint(0, 2**63 - 1, (1,)).item()
    manual_seed(value)
    return value


def seed_all() -> int:
    value = torch.randint(0, 2**63 - 1, (1,)).item()
    manual_seed_all(value)
    return value


def initial_seed() -> int:
    return _C.initial_seed(current_device())


def get_rng_state(dev="neuron") -> torch.Tensor:
    """The generator state of ``dev``: a 16-byte uint8 cpu tensor, (seed, offset)."""
    data = _C.get_rng_state(_device_index(dev))
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def set_rng_state(new_state: torch.Tensor, dev="neuron") -> None:
    state = new_state.detach().to("cpu", torch.uint8).contiguous()
    _C.set_rng_state(_device_index(dev), bytes(state.numpy().tobytes()))


def get_rng_state_all() -> list:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


def _register_exit_sync():
    # Queued work must not outlive the interpreter: wait for it at exit.
    import atexit

    def _sync_all():
        for index in range(device_count()):
            try:
                _C.synchronize(index)
            except Exception as err:  # noqa: BLE001 - report, never raise at exit
                warnings.warn(f"neuron:{index}: {err}", RuntimeWarning, stacklevel=2)

    atexit.register(_sync_all)


_register_exit_sync()
