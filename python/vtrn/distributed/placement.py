"""Where each rank of a group runs (node, logical core), exchanged through the group's store.

Each process runs on one logical core of one node. The node is torchrun's ``GROUP_RANK`` (else
``NODE_RANK``, else 0); the core is the process's only visible core when
``NEURON_RT_VISIBLE_CORES`` names one (``vtrn run`` does this), else the visible core at index
``LOCAL_RANK``. In a fake world (``torch.testing._internal.distributed.fake_pg``), which checks a
large mesh in one process, rank r sits where a row-major launch puts it.
"""

from __future__ import annotations

import os

import torch.distributed as dist

from vtrn import _C

_PLACEMENT_KEY = "vtrn/placement/{}"


def device_config() -> dict:
    """The device configuration of this process (instance, LNC, visible cores)."""
    return _C.config()


def _local_placement(global_rank: int):
    """(node, logical core of the node) of this process, with clear errors."""
    config = device_config()
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
                f"belongs to one process. Give each process its own core (vtrn run sets "
                f"NEURON_RT_VISIBLE_CORES per local rank)."
            )
        seen[p] = r
    return placements
