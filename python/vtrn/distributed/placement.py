"""Where each rank of a group runs (node, logical core), exchanged through the group's store.

Each process runs on one logical core of one node. The node is torchrun's ``GROUP_RANK`` (else
``NODE_RANK``, else 0); the core is the one of the process's device. Every process sees the
node's cores and picks its own, as under CUDA: ``torch.neuron.set_device(LOCAL_RANK)``, else the
first process group picks the local rank's (as TorchNeuron does), or the only visible core when
``NEURON_RT_VISIBLE_CORES`` names one. In a fake world
(``torch.testing._internal.distributed.fake_pg``), which checks a large mesh in one process, rank
r sits where a row-major launch puts it.
"""

from __future__ import annotations

import os

import torch.distributed as dist

from vtrn import _C

_PLACEMENT_KEY = "vtrn/placement/{}"


def device_config() -> dict:
    """The device configuration of this process (instance, LNC, visible cores)."""
    return _C.config()


def local_rank(global_rank: int) -> int:
    """torchrun's ``LOCAL_RANK``; without a launcher, the global rank (one node)."""
    return int(os.environ.get("LOCAL_RANK", str(global_rank)))


def adopt_local_device(global_rank: int) -> int:
    """Chooses the process's device once, as TorchNeuron's first process group does: the
    calling thread's own if it chose one (``set_device``), else the local rank's; the only
    visible core when the process sees one. Returns the calling thread's device."""
    import torch

    config = device_config()
    visible = config["visible_cores"]
    if not _C.process_device_chosen():
        rank = local_rank(global_rank)
        if len(visible) == 1:
            index = 0
        elif rank < len(visible):
            index = rank
        else:
            raise RuntimeError(
                f"rank {global_rank} (LOCAL_RANK {rank}) has no logical core: this process sees "
                f"{len(visible)} cores of {config['instance']} (LNC{config['lnc']}), which runs at "
                f"most {config['cores_per_node']} processes per node. Launch at most that many per "
                f"node (vtrn run --nproc-per-node), or add nodes."
            )
        _C.adopt_process_device(index)
    return torch.neuron.current_device()


def _local_placement(global_rank: int):
    """(node, logical core of the node) of this process: the core of its device."""
    visible = device_config()["visible_cores"]
    node = int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")))
    return node, visible[adopt_local_device(global_rank)]


def is_fake_store(store) -> bool:
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


def gather_placements(store, global_ranks, my_global_rank):
    """Every member's (node, core), exchanged through the group's store."""
    if is_fake_store(store):
        per_node = device_config()["cores_per_node"]
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
                f"belongs to one process. Give each process its own core: "
                f"torch.neuron.set_device(LOCAL_RANK), or NEURON_RT_VISIBLE_CORES per process."
            )
        seen[p] = r
    return placements
