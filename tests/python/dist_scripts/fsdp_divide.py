"""Run under `vtrn run --nproc-per-node 4`: FSDP2 with set_gradient_divide_factor, whose
reduce-scatter is ReduceOp.PREMUL_SUM(1 / factor) (AVG when the factor is the group size), as
torchtitan sets it. The gradients are the sum over ranks divided by the factor: the CPU
reference scales the mean loss of the whole batch by world / factor. For each factor given (one
process group serves them all), rank 0 prints each step's loss beside the reference's, then the
largest parameter difference."""

import sys
import warnings

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FSDPModule, fully_shard

warnings.filterwarnings("ignore")
dist.init_process_group("neuron")
r, w = dist.get_rank(), dist.get_world_size()
device = torch.device("neuron", torch.neuron.current_device())
steps, per_rank = 4, 4


def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 24), torch.nn.Tanh(), torch.nn.Linear(24, 4))


def train(factor):
    model = make().to(device)
    for layer in (model[0], model[2]):
        fully_shard(layer)
    fully_shard(model)
    for (
        module
    ) in model.modules():  # each FSDP module reduces its own parameters (torchtitan's loop)
        if isinstance(module, FSDPModule):
            module.set_gradient_divide_factor(factor)
    reference = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05)
    for step in range(steps):
        g = torch.Generator().manual_seed(10 + step)
        x, y = torch.randn(w * per_rank, 8, generator=g), torch.randn(w * per_rank, 4, generator=g)
        mine = slice(per_rank * r, per_rank * (r + 1))
        loss = torch.nn.functional.mse_loss(model(x[mine].to(device)), y[mine].to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total, op=dist.ReduceOp.AVG)
        ref_loss = torch.nn.functional.mse_loss(reference(x), y)
        ref_opt.zero_grad()
        (ref_loss * (w / factor)).backward()
        ref_opt.step()
        if r == 0:
            print(
                f"factor {factor:g} step {step} {total.item():.7f} {ref_loss.item():.7f}",
                flush=True,
            )
    diff = max(
        (p.full_tensor().cpu() - q).abs().max().item()
        for p, q in zip(model.parameters(), reference.parameters())
    )
    if r == 0:
        print(f"factor {factor:g} max_param_diff {diff:.3e}", flush=True)


for factor in map(float, sys.argv[1:]):
    train(factor)
dist.destroy_process_group()
