"""Run under `vtrn run --nproc-per-node 4 ... MODE`: DDP or FSDP2 on neuron; rank 0 prints
each step's loss beside the single-process cpu run on the whole batch."""

import sys
import warnings

import torch
import torch.distributed as dist

warnings.filterwarnings("ignore")
mode = sys.argv[1]
steps = 5
dist.init_process_group("cpu:gloo,neuron:neuron")
r, w = dist.get_rank(), dist.get_world_size()
dev = torch.device("neuron", torch.neuron.current_device())


def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(8 * w, 16, generator=g), torch.randn(8 * w, 1, generator=g)


ref = make()
ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
model = make().to(dev)
if mode == "ddp":
    model = torch.nn.parallel.DistributedDataParallel(model)
else:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("neuron", (w,), mesh_dim_names=("shard",))
    fully_shard(model[0], mesh=mesh)
    fully_shard(model[2], mesh=mesh)
    fully_shard(model, mesh=mesh)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(steps):
    x, y = batch(step)
    mine = slice(8 * r, 8 * (r + 1))
    loss = torch.nn.functional.mse_loss(model(x[mine].to(dev)), y[mine].to(dev))
    opt.zero_grad()
    loss.backward()
    opt.step()
    total = loss.detach().clone()
    dist.all_reduce(total, op=dist.ReduceOp.AVG)
    ref_loss = torch.nn.functional.mse_loss(ref(x), y)
    ref_opt.zero_grad()
    ref_loss.backward()
    ref_opt.step()
    if r == 0:
        print(f"step {step} {total.item():.7f} {ref_loss.item():.7f}", flush=True)
dist.destroy_process_group()
