"""One process plays rank R of a 64-rank trn2.48xlarge LNC2 world (PyTorch's fake process
group) and runs the TP all-reduce and FSDP all-gather of the meshes of "Best practices for
training on AWS Neuron". Prints one line per mesh: the layout, then 'ok' or the error of the
collective that failed."""

import sys
import warnings

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.testing._internal.distributed.fake_pg import FakeStore

warnings.filterwarnings("ignore")
rank = int(sys.argv[1])


def check(name, build):
    dist.init_process_group("neuron", store=FakeStore(), rank=rank, world_size=64)
    try:
        mesh = build()
        x = torch.ones(4, device="neuron")
        if "tp" in mesh.mesh_dim_names:
            dist.all_reduce(x, group=mesh.get_group("tp"))
        out = torch.empty(4 * mesh.size(0), device="neuron")
        dist.all_gather_into_tensor(out, x, group=mesh.get_group(mesh.mesh_dim_names[0]))
        print(f"{name}: ok", flush=True)
    except Exception as err:  # noqa: BLE001 - the error is the result
        print(f"{name}: {type(err).__name__}: {' '.join(str(err).split())}", flush=True)
    finally:
        dist.destroy_process_group()


def chip_pair_mesh():
    # The document's non-default TP8 x FSDP8 mesh, built as the document shows.
    chip_pairs = [(0, 12), (1, 13), (2, 14), (3, 15), (4, 8), (5, 9), (6, 10), (7, 11)]
    ranks = torch.tensor(
        [[4 * chip + core for chip in pair for core in range(4)] for pair in chip_pairs]
    )
    groups = {}
    for name, axis_groups in (("dp", ranks.T), ("tp", ranks)):
        for members in axis_groups.tolist():
            group = dist.new_group(ranks=members, sort_ranks=False)
            if dist.get_rank() in members:
                groups[name] = group
    return DeviceMesh.from_group(
        [groups["dp"], groups["tp"]], device_type="neuron", mesh=ranks, mesh_dim_names=("dp", "tp")
    )


check("TP1 x FSDP64", lambda: init_device_mesh("neuron", (64,), mesh_dim_names=("shard",)))
check("TP4 x FSDP16", lambda: init_device_mesh("neuron", (16, 4), mesh_dim_names=("shard", "tp")))
check(
    "TP8 x FSDP8 default", lambda: init_device_mesh("neuron", (8, 8), mesh_dim_names=("dp", "tp"))
)
check("TP8 x FSDP8 chip pairs", chip_pair_mesh)
