"""Which ``neuron`` devices this process sees, the current one, their properties, and
waiting for their work."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import warnings
from dataclasses import dataclass

import torch

from vtrn import _C

_initialized = False
_init_lock = threading.Lock()


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
    """Makes ``dev`` the current device of the calling thread and, as CUDA's does, initializes
    the device (``is_initialized()`` is then True: FakeTensor reads it to place an
    index-less ``"neuron"`` on the current device instead of ``neuron:0``). A negative index
    does nothing, as with ``torch.cuda.set_device(-1)``."""
    index = _device_index(dev)
    if index < 0:  # torch.cuda.set_device ignores a negative index (no device, no init)
        return
    _lazy_init()
    _C.set_device(index)


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
    major: int  # the NeuronCore generation: 2 on Trainium, 3 on Trainium2, 4 on Trainium3
    minor: int

    def __repr__(self):
        return (
            f"_NeuronDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 2**20}MB, "
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
    major, minor = _core_version(config["core"])
    return _NeuronDeviceProperties(
        name=_device_name(config),
        total_memory=config["bank_bytes"],
        logical_cores_per_chip=config["logical_cores_per_chip"],
        lnc=config["lnc"],
        instance=config["instance"],
        core=config["visible_cores"][index],
        major=major,
        minor=minor,
    )


def _core_version(core_name: str) -> tuple:
    """(N, 0) for "NeuronCore-vN": the architecture version the Neuron documentation names."""
    match = re.fullmatch(r"NeuronCore-v(\d+)", core_name)
    if match is None:
        raise RuntimeError(f"unknown NeuronCore name {core_name!r}: expected 'NeuronCore-v<N>'")
    return int(match.group(1)), 0


def _device_name(config) -> str:
    suffix = f", LNC{config['lnc']}" if config["lnc"] else ""
    return f"{config['chip']} {config['core']} ({config['instance']}{suffix})"


def get_device_name(dev=None) -> str:
    return get_device_properties(dev).name


def get_device_capability(dev=None) -> tuple:
    """The (major, minor) architecture version of ``dev``, as torch.cuda.get_device_capability.

    TorchNeuron has no such call; vtrn answers with the NeuronCore generation the Neuron
    documentation names: (2, 0) for NeuronCore-v2 (Trainium), (3, 0) for NeuronCore-v3
    (Trainium2), (4, 0) for NeuronCore-v4 (Trainium3). The dtypes a device holds are
    ``torch.accelerator.get_device_capability()["supported_dtypes"]``.
    """
    props = get_device_properties(dev)
    return props.major, props.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is Trainium's training baseline."""
    return True


def get_amp_supported_dtype() -> list:
    return [torch.bfloat16, torch.float16, torch.float32]


def _autograd_device_threads() -> set[int]:
    """Devices whose autograd worker thread (``pt_autograd_<index>``) this process has started."""
    indices = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return indices
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            continue
        if name.startswith("pt_autograd_") and name[len("pt_autograd_") :].isdigit():
            indices.add(int(name[len("pt_autograd_") :]))
    return indices


def _drain_autograd_device_thread(index: int) -> None:
    """Returns once neuron:<index>'s autograd thread has let go of every finished backward.

    The thread drops its reference to a backward's GraphTask only after the caller has been told
    that the backward finished. The GraphTask's thread-local state holds the Python context that
    ``torch.autograd.backward`` stashes, and releasing it takes the GIL; once the interpreter is
    finalizing, CPython ends a thread that asks for the GIL with pthread_exit, whose unwinding
    through PyTorch's noexcept destructors aborts the process ("terminate called without an
    active exception"). The thread works through its queue in order, so a backward that runs on
    it, called straight through the engine (which stashes nothing) with a view of an empty
    tensor (no kernel, no allocation), returns only after the earlier ones were released.
    """
    device = torch.device("neuron", index)
    leaf = torch.empty(0, device=device, requires_grad=True)
    torch.autograd.Variable._execution_engine.run_backward(
        (leaf.view(0),), (torch.empty(0, device=device),), False, False, (), True, True
    )


def register_exit_sync() -> None:
    """Waits for every device's queued work, and its autograd thread, when the interpreter exits."""
    import atexit

    def _sync_all():
        for index in range(device_count()):
            try:
                _C.synchronize(index)
            except Exception as err:  # noqa: BLE001 - report, never raise at exit
                warnings.warn(f"neuron:{index}: {err}", RuntimeWarning, stacklevel=2)
        for index in sorted(_autograd_device_threads()):
            if index >= device_count() or torch.accelerator.max_memory_allocated(index) == 0:
                continue  # no backward ran there; allocating would claim an unused core
            try:
                _drain_autograd_device_thread(index)
            except Exception as err:  # noqa: BLE001 - report, never raise at exit
                warnings.warn(f"neuron:{index}: {err}", RuntimeWarning, stacklevel=2)

    atexit.register(_sync_all)
