"""Run under `vtrn run --nproc-per-node 4`: collectives inside compiled modules.

1. A tensor-parallel MLP (a replicated layer, then DTensor's ColwiseParallel and
   RowwiseParallel over 4 ranks: an all-reduce in the forward graph and one in the backward),
   compiled with fullgraph=True, trained 3 steps from the same weights as eager mode.
2. A function calling torch.distributed._functional_collectives directly (all_gather,
   reduce_scatter, all_reduce with avg), compiled with fullgraph=True.

Rank 0 prints, per TP step, the compiled, eager and single-process CPU losses ("tp STEP C E
REF"). Every rank prints its functional result against eager mode and the value computed by
hand on the CPU from every rank's input ("funcol RANK max|compiled-eager| max|compiled-cpu|");
the same after the module ran on a side stream followed by an eager all_reduce ("streams RANK
max|compiled-eager| sum"); the executables each AOT graph took ("modules tp|funcol RANK
name=count ..."); and how many compiled modules' StableHLO text holds a matmul and a
collective, and all three collective kinds ("collective_modules RANK n m").
"""

import os
import pathlib
import sys
import warnings

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)

from vtrn.compile import graph_modules, reset_dynamo_metrics

warnings.filterwarnings("ignore")
local_rank = int(os.environ["LOCAL_RANK"])
torch.neuron.set_device(local_rank)
device = torch.device(f"neuron:{local_rank}")
dist.init_process_group("neuron")
rank, world = dist.get_rank(), dist.get_world_size()
mesh = init_device_mesh("neuron", (world,), mesh_dim_names=("tp",))
steps = 3


def say(line):
    """One line of the report in one write: under `vtrn run` the ranks share the pipe, and a
    print's text and newline are two writes another rank's line can come between."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 16),  # replicated: its output's gradient is all-reduced
        torch.nn.Tanh(),
        torch.nn.Linear(16, 32),
        torch.nn.Tanh(),
        torch.nn.Linear(32, 16),
        torch.nn.Tanh(),
    )


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(8, 16, generator=g), torch.randn(8, 16, generator=g)


def tp_losses(compiled):
    torch._dynamo.reset()
    model = make().to(device)
    parallelize_module(model, mesh["tp"], {"2": ColwiseParallel(), "4": RowwiseParallel()})
    forward = torch.compile(model, backend="neuron", fullgraph=True) if compiled else model
    # Per parameter: the foreach form refuses the mix of plain (replicated) and DTensor ones.
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
    out = []
    for step in range(steps):
        x, y = batch(step)
        loss = torch.nn.functional.mse_loss(forward(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def cpu_losses():
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = []
    for step in range(steps):
        x, y = batch(step)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def report_modules(tag):
    counts = " ".join(f"{name}={n}" for name, n in sorted(graph_modules().items()))
    say(f"modules {tag} {rank} {counts}")


reset_dynamo_metrics()
compiled = tp_losses(True)
report_modules("tp")
eager = tp_losses(False)
if rank == 0:
    for step, (c, e, ref) in enumerate(zip(compiled, eager, cpu_losses())):
        say(f"tp {step} {c!r} {e!r} {ref!r}")


def rank_input(r):
    return torch.arange(4 * 6, dtype=torch.float32).reshape(4, 6) * 0.25 + r


def collectives(x):
    gathered = funcol.all_gather_tensor(x * 2, 0, mesh["tp"])
    scattered = funcol.reduce_scatter_tensor(gathered.sin(), "sum", 0, mesh["tp"])
    averaged = funcol.all_reduce(scattered + 1, "avg", mesh["tp"])
    return averaged.cos() * 3


def collectives_by_hand():
    gathered = torch.cat([rank_input(r) * 2 for r in range(world)])
    # Every rank holds the same gathered tensor: rank r's slice of the sum is world times
    # its slice of sin; the average over the ranks then mixes every rank's slice.
    slices = (gathered.sin() * world).chunk(world)
    averaged = sum(s + 1 for s in slices) / world
    return averaged.cos() * 3


reset_dynamo_metrics()
torch._dynamo.reset()
x = rank_input(rank).to(device)
compiled_collectives = torch.compile(collectives, backend="neuron", fullgraph=True)
got = compiled_collectives(x).cpu()
report_modules("funcol")
want = collectives(x).cpu()
ref = collectives_by_hand()
say(f"funcol {rank} {(got - want).abs().max().item()!r} {(got - ref).abs().max().item()!r}")

# The module queued on a side stream, then an eager all_reduce on the default stream over the
# same group: the eager one must wait for the module's collectives, or ranks would pair them up
# differently. Both results are checked ("streams RANK max|module-eager| eager_sum").
side = torch.neuron.Stream()
with torch.neuron.stream(side):
    on_side = compiled_collectives(x)
total = torch.full((3,), float(rank), device=device)
dist.all_reduce(total, group=mesh["tp"].get_group())
torch.neuron.synchronize()
say(f"streams {rank} {(on_side.cpu() - want).abs().max().item()!r} {total.cpu()[0].item()!r}")


# The modules' StableHLO text (every module compiled in this run lands there): the forward and
# backward TP modules each hold a matmul and a collective; one module holds all three kinds.
dist.barrier()
texts = [p.read_text() for p in pathlib.Path(os.environ["TORCH_NEURONX_HLO_CACHE_DIR"]).iterdir()]
# A matmul is a dot_general, or a biased linear's ATen addmm call (compiler/aten_addmm.h).
tp_modules = sum(
    '"vtrn.collective"' in t and ("dot_general" in t or '"vtrn.aten_addmm"' in t) for t in texts
)
funcol_modules = sum(
    all(f"kind={k};" in t for k in ("all_gather", "reduce_scatter", "all_reduce")) for t in texts
)
say(f"collective_modules {rank} {tp_modules} {funcol_modules}")
dist.destroy_process_group()
