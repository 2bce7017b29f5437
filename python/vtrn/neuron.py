"""``torch.neuron``: the device module of the ``neuron`` device, shaped like ``torch.cuda``."""

import contextlib
import threading

import torch

from vtrn import _C

__all__ = [
    "current_device",
    "device",
    "device_count",
    "init",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "set_device",
    "synchronize",
]

_initialized = False
_init_lock = threading.Lock()


def is_available() -> bool:
    """True: the emulated device is present wherever vtrn is installed."""
    return device_count() > 0


def device_count() -> int:
    """Number of logical NeuronCores this process sees."""
    return _C.device_count()


def _lazy_init():
    global _initialized
    with _init_lock:
        _initialized = True


init = _lazy_init


def is_initialized() -> bool:
    return _initialized


def _is_in_bad_fork() -> bool:
    # Device memory is host memory: a forked child inherits a usable device.
    return False


def _device_index(dev, *, optional: bool = True) -> int:
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
    """Waits for all work queued on ``dev`` (default: the current device)."""
    _C.synchronize(_device_index(dev))


def manual_seed(seed: int) -> None:
    """Seeds the default generator of the current device."""
    _C.manual_seed(current_device(), int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def manual_seed_all(seed: int) -> None:
    """Seeds the default generator of every device."""
    for index in range(device_count()):
        _C.manual_seed(index, int(seed) & 0xFFFF_FFFF_FFFF_FFFF)
