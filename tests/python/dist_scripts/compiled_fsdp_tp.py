"""Run under `vtrn run --nproc-per-node 4`: FSDP2 over 4 processes, and FSDP2 x TP over a
(dp 2, tp 2) DeviceMesh, each trained eagerly and compiled with torch.compile(backend="neuron")
from the same weights on the same batches. (Dynamo recompiles FSDP2 x TP's graph with symbolic
sizes after its first step; the backend compiles that graph per concrete shape.) Rank 0 prints how many graphs the backend
compiled for each model, then per step the compiled loss, the eager loss and the
single-process CPU loss."""

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

from vtrn.compile import get_dynamo_metrics, reset_dynamo_metrics

warnings.filterwarnings("ignore")
local_rank = int(os.environ["LOCAL_RANK"])
torch.neuron.set_device(local_rank)
device = torch.device(f"neuron:{local_rank}")
r = int(os.environ["RANK"])
steps, per_rank = 3, 4


class MLP(torch.nn.Module):
    # A module class of the script's own: Dynamo skips the forward of an FSDP-wrapped
    # torch.nn.Sequential (its code lives in torch.nn), so that would compile nothing.
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x):
        return torch.tanh(self.fc2(torch.tanh(self.fc1(x))))


def make():
    torch.manual_seed(0)
    return MLP()


def batch(step, rows):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(rows, 16, generator=g), torch.randn(rows, 16, generator=g)


def losses(model, forward, rows, mine, group):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = []
    for step in range(steps):
        x, y = batch(step, rows)
        loss = torch.nn.functional.mse_loss(forward(x[mine].to(device)), y[mine].to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total, op=dist.ReduceOp.AVG, group=group)
        out.append(total.item())
    return out


def cpu_losses(rows):
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = []
    for step in range(steps):
        x, y = batch(step, rows)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def run(name, shard, rows, mine, group):
    results = []
    for compiled in (True, False):
        torch._dynamo.reset()
        reset_dynamo_metrics()
        model = make().to(device)
        shard(model)
        forward = torch.compile(model, backend="neuron") if compiled else model
        results.append(losses(model, forward, rows, mine, group))
        if compiled and r == 0:
            print(name, "graphs", get_dynamo_metrics()["graphs"], flush=True)
    if r == 0:
        for step, (c, e, ref) in enumerate(zip(*results, cpu_losses(rows))):
            print(f"{name} {step} {c:.7f} {e:.7f} {ref:.7f}", flush=True)


dist.init_process_group("neuron")
world = dist.get_world_size()
run(
    "fsdp",
    lambda m: fully_shard(m),
    world * per_rank,
    slice(per_rank * r, per_rank * (r + 1)),
    None,
)

mesh = init_device_mesh("neuron", (2, 2), mesh_dim_names=("dp", "tp"))
dp = mesh["dp"].get_local_rank()


def fsdp_tp(m):
    parallelize_module(m, mesh["tp"], {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    fully_shard(m, mesh=mesh["dp"])


run("fsdp_tp", fsdp_tp, 2 * per_rank, slice(per_rank * dp, per_rank * (dp + 1)), None)
dist.destroy_process_group()
