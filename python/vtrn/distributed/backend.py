"""The c10d backend object of a ``neuron`` process group: Gloo (or, in a fake world, a fake
group) moves the data; vtrn's C++ backend checks each group's placement on its first
collective and models its time."""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist

from vtrn import _C
from vtrn.distributed.placement import device_config, gather_placements, is_fake_store


def create_backend(opts, backend_options):
    """What torch.distributed calls to build the backend of one group (extended API)."""
    store = opts.store
    rank, size = opts.group_rank, opts.group_size
    timeout = opts.timeout if isinstance(opts.timeout, timedelta) else timedelta(seconds=1800)
    global_ranks = list(opts.global_ranks_in_group) or list(range(size))
    my_global_rank = global_ranks[rank]
    if is_fake_store(store):
        from torch._C._distributed_c10d import FakeProcessGroup

        transport = FakeProcessGroup._create_internal(rank, size)
    else:
        transport = dist.ProcessGroupGloo(
            dist.PrefixStore("vtrn-gloo/", store), rank, size, timeout
        )
    placements = gather_placements(store, global_ranks, my_global_rank)
    config = device_config()
    nodes = max(node for node, _ in placements) + 1
    return _C.NeuronBackend(
        transport, rank, size, config["instance"], config["lnc"], nodes, placements
    )
