"""Run under `vtrn run --nproc-per-node 8`: a training script written the CUDA way, with
"neuron" for "cuda": each process selects torch.device(f"neuron:{LOCAL_RANK}"), FSDP2 over the
dp axis of a (dp 2, tp 4) DeviceMesh with tensor parallelism over tp, and DDP with
device_ids=[local_rank]. Rank 0 prints each step's loss beside the single-process CPU run."""

import os
import warnings

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)
from torch.nn.parallel import DistributedDataParallel

warnings.filterwarnings("ignore")
local_rank = int(os.environ["LOCAL_RANK"])
device_type = "neuron"
torch.neuron.set_device(local_rank)  # as torch.cuda.set_device(local_rank)
device = torch.device(f"{device_type}:{local_rank}")  # as torchtitan builds it
mesh = init_device_mesh(device_type, (2, 4), mesh_dim_names=("dp", "tp"))
r, w = dist.get_rank(), dist.get_world_size()
assert torch.neuron.current_device() == local_rank
steps, per_rank = 4, 4


def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 16), torch.nn.Tanh()
    )


def batch(step, rows):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(rows, 16, generator=g), torch.randn(rows, 16, generator=g)


def train(name, model, rank_slice, rows):
    """Trains |model| and the CPU reference side by side on the same global batches."""
    reference = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(steps):
        x, y = batch(step, rows)
        mine = rank_slice
        loss = torch.nn.functional.mse_loss(model(x[mine].to(device)), y[mine].to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total, op=dist.ReduceOp.AVG)  # the mean over the global batch
        ref_loss = torch.nn.functional.mse_loss(reference(x), y)
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        if r == 0:
            print(f"{name} {step} {total.item():.7f} {ref_loss.item():.7f}", flush=True)


# FSDP2 x TP: the tp ranks of a dp replica see the same rows; the dp replicas split the batch.
model = make().to(device)
parallelize_module(model, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
fully_shard(model, mesh=mesh["dp"])
dp = mesh["dp"].get_local_rank()
train("fsdp_tp", model, slice(per_rank * dp, per_rank * (dp + 1)), 2 * per_rank)

# DDP over all eight processes, each on its own core.
ddp = DistributedDataParallel(make().to(device), device_ids=[local_rank])
assert next(ddp.parameters()).device == device
train("ddp", ddp, slice(per_rank * r, per_rank * (r + 1)), w * per_rank)
dist.destroy_process_group()
