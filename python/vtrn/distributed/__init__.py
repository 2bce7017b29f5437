"""The ``neuron`` c10d backend: ``dist.init_process_group("neuron")`` or
``"cpu:gloo,neuron:neuron"``.

Every group's first collective checks that the Neuron runtime could build an algorithm for
the physical placement of its ranks, and raises the runtime's error if not
(``failed (2) to init a collective algorithm. reason: no_hier no_mesh``). Data moves through
Gloo over the same host memory.

``placement`` says where each rank runs; ``backend`` builds the backend of one group.
"""

import functools

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


def _default_backend_of_undefined_groups() -> None:
    """``init_process_group()`` without a backend (as ``init_device_mesh`` calls it) creates
    only the accelerator's backend, ``neuron``, but PyTorch 2.13 marks Gloo as the group's
    default backend unless it is NCCL; DDP's constructor then asks for the Gloo backend and
    fails ("Could not find backend type 1"). On CUDA the default is NCCL, which exists. Such
    groups get their real default, the ``neuron`` (custom) backend."""
    from torch.distributed import distributed_c10d as c10d

    original = c10d._new_process_group_helper
    if getattr(original, "_vtrn_default_backend", False):
        return

    @functools.wraps(original)
    def new_process_group_helper(*args, **kwargs):
        pg, prefix_store = original(*args, **kwargs)
        backend = args[3] if len(args) > 3 else kwargs.get("backend")
        if (
            isinstance(pg, c10d.ProcessGroup)
            and str(backend) == dist.Backend.UNDEFINED
            and c10d.BackendConfig(backend).get_device_backend_map() == {"neuron": BACKEND}
        ):
            pg._set_default_backend(c10d.ProcessGroup.BackendType.CUSTOM)
        return pg, prefix_store

    new_process_group_helper._vtrn_default_backend = True
    c10d._new_process_group_helper = new_process_group_helper


def register():
    """Registers the backend with torch.distributed (once)."""
    global _registered
    if _registered or not dist.is_available():
        return
    if BACKEND not in dist.Backend.backend_list:
        dist.Backend.register_backend(
            BACKEND, create_backend, extended_api=True, devices=["neuron"]
        )
    _default_backend_of_undefined_groups()
    _registered = True
