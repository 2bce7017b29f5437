"""Random numbers: one Philox generator per device; its state is 16 bytes (seed, offset)."""

from __future__ import annotations

import torch

from vtrn import _C
from vtrn.neuron.devices import _device_index, current_device, device_count


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
