"""The ``neuron`` c10d backend: ``dist.init_process_group("neuron")`` or
``"cpu:gloo,neuron:neuron"``.

Every group's first collective checks that the Neuron runtime could build an algorithm for
the physical placement of its ranks, and raises the runtime's error if not
(``failed (2) to init a collective algorithm. reason: no_hier no_mesh``). Data moves through
Gloo over the same host memory.

``placement`` says where each rank runs; ``backend`` builds the backend of one group.
"""

import torch
import torch.distributed as dist

from vtrn import _C
from vtrn.distributed.backend import create_backend

BACKEND = "neuron"

__all__ = ["BACKEND", "modeled_collective_seconds", "register"]


def modeled_collective_seconds(device=None) -> float:
    """Modeled Trainium time of the collectives this process ran on ``device``."""
    index = torch.neuron.current_device() if device is None else torch.neuron._device_index(device)
    return _C.modeled_collective_seconds(index)


_registered = False


def register():
    """Registers the backend with torch.distributed (once)."""
    global _registered
    if _registered or not dist.is_available():
        return
    if BACKEND not in dist.Backend.backend_list:
        dist.Backend.register_backend(
            BACKEND, create_backend, extended_api=True, devices=["neuron"]
        )
    _registered = True
