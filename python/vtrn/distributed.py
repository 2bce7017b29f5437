"""The ``neuron`` c10d backend: ``dist.init_process_group("neuron")`` or
``"cpu:gloo,neuron:neuron"``.

Every group's first collective checks that the Neuron runtime could build an algorithm for
the physical placement of its ranks, and raises the runtime's error if not
(``failed (2) to init a collective algorithm. reason: no_hier no_mesh``). Data moves through
Gloo over the same host memory.

Placement: each process runs on one logical core of one node. The node is torchrun's
``GROUP_RANK`` (else ``NODE_RANK``, else 0); the core is the process's only visible core
when ``NEURON_RT_VISIBLE_CORES`` names one (``vtrn run`` does this), else the visible core
at index ``LOCAL_RANK``. In a fake world (``torch.testing._internal.distributed.fake_pg``),
which checks a large mesh in one process, rank r sits where a row-major launch puts it.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist

from vtrn import _C

BACKEND = "neuron"
_PLACEMENT_KEY = "vtrn/placement/{}"


def modeled_collective_seconds(device=None) -> float:
    """Modeled Trainium time of the collectives this process ran on ``device``."""
    index = torch.neuron.current_device() if device is None else torch.neuron._device_index(device)
    return _C.modeled_collective_seconds(index)


def _config():
    return _C.config()


def _local_placement(global_rank: int):
    """(node, logical core of the node) of this process, with clear errors."""
    config = _config()
    visible = config["visible_cores"]
    node = int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")))
    if len(visible) == 1:
        return node, visible[0]
    local_rank = int(os.environ.get("LOCAL_RANK", str(global_rank)))
    if local_rank >= len(visible):
        raise RuntimeError(
            f"rank {global_rank} (LOCAL_RANK {local_rank}) has no logical core: this process sees "
            f"{len(visible)} cores of {config['instance']} (LNC{config['lnc']}), which runs at most "
            f"{config['cores_per_node']} processes per node. Launch at most that many per node "
            f"(vtrn run --nproc-per-node), or add nodes."
        )
    return node, visible[local_rank]


def _is_fake_store(store) -> bool:
    """True for torch's FakeStore, also behind the PrefixStores c10d wraps groups' stores in
    (which hand it back as a bare dist.Store whose methods are not implemented)."""
    while isinstance(store, dist.PrefixStore):
        store = store.underlying_store
    if type(store).__name__ == "FakeStore":
        return True
    if type(store) is not dist.Store:
        return False  # a real store: TCPStore, HashStore, FileStore
    try:
        store.set("vtrn/probe", b"1")
        return False
    except RuntimeError:
        return True


def _gather_placements(store, global_ranks, my_global_rank):
    """Every member's (node, core), exchanged through the group's store."""
    if _is_fake_store(store):
        per_node = _config()["cores_per_node"]
        return [(r // per_node, r % per_node) for r in global_ranks]
    node, core = _local_placement(my_global_rank)
    store.set(_PLACEMENT_KEY.format(my_global_rank), f"{node},{core}")
    placements = []
    for r in global_ranks:
        text = store.get(_PLACEMENT_KEY.format(r)).decode()
        n, c = (int(x) for x in text.split(","))
        placements.append((n, c))
    seen = {}
    for r, p in zip(global_ranks, placements):
        if p in seen:
            raise RuntimeError(
                f"ranks {seen[p]} and {r} both run on logical core {p[1]} of node {p[0]}: a NeuronCore "
                f"belongs to one process. Give each process its own core (vtrn run sets "
                f"NEURON_RT_VISIBLE_CORES per local rank)."
            )
        seen[p] = r
    return placements


def _create_backend(opts, backend_options):
    store = opts.store
    rank, size = opts.group_rank, opts.group_size
    timeout = opts.timeout if isinstance(opts.timeout, timedelta) else timedelta(seconds=1800)
    global_ranks = list(opts.global_ranks_in_group) or list(range(size))
    my_global_rank = global_ranks[rank]
    if _is_fake_store(store):
        from torch._C._distributed_c10d import FakeProcessGroup

        transport = FakeProcessGroup._create_internal(rank, size)
    else:
        transport = dist.ProcessGroupGloo(
            dist.PrefixStore("vtrn-gloo/", store), rank, size, timeout
        )
    placements = _gather_placements(store, global_ranks, my_global_rank)
    config = _config()
    nodes = max(node for node, _ in placements) + 1
    return _C.NeuronBackend(
        transport, rank, size, config["instance"], config["lnc"], nodes, placements
    )


_registered = False


def register():
    """Registers the backend with torch.distributed (once)."""
    global _registered
    if _registered or not dist.is_available():
        return
    if BACKEND not in dist.Backend.backend_list:
        dist.Backend.register_backend(
            BACKEND, _create_backend, extended_api=True, devices=["neuron"]
        )
    _registered = True
