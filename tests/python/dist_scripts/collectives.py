"""Run under `vtrn run --nproc-per-node 4`: every collective on neuron tensors, checked
against values computed by hand from the ranks."""

import torch
import torch.distributed as dist

import vtrn.distributed

dist.init_process_group("cpu:gloo,neuron:neuron")
r, w = dist.get_rank(), dist.get_world_size()
dev = torch.device("neuron", torch.neuron.current_device())
ranks = list(range(w))


def full(value, n=4, dtype=torch.float32):
    return torch.full((n,), float(value), device=dev, dtype=dtype)


x = full(r + 1)
dist.all_reduce(x)
assert x.cpu().tolist() == [sum(k + 1 for k in ranks)] * 4, x

x = full(r + 1)
dist.all_reduce(x, op=dist.ReduceOp.AVG)
assert x.cpu().tolist() == [sum(k + 1 for k in ranks) / w] * 4

x = full(r + 1, dtype=torch.bfloat16)
dist.all_reduce(x, op=dist.ReduceOp.MAX)
assert x.cpu().float().tolist() == [float(w)] * 4

out = [torch.empty(2, device=dev) for _ in ranks]
dist.all_gather(out, full(r, 2))
assert [t.cpu().tolist() for t in out] == [[float(k)] * 2 for k in ranks]

big = torch.empty(2 * w, device=dev)
dist.all_gather_into_tensor(big, full(r, 2))
assert big.cpu().tolist() == [float(k) for k in ranks for _ in range(2)]

shard = torch.empty(2, device=dev)
dist.reduce_scatter_tensor(shard, torch.arange(2 * w, dtype=torch.float32, device=dev) * (r + 1))
scale = sum(k + 1 for k in ranks)
assert shard.cpu().tolist() == [float(2 * r * scale), float((2 * r + 1) * scale)]

b = full(r)
dist.broadcast(b, src=2)
assert b.cpu().tolist() == [2.0] * 4

red = full(r + 1)
dist.reduce(red, dst=1)
if r == 1:
    assert red.cpu().tolist() == [float(scale)] * 4

a2a_out = torch.empty(w, device=dev)
dist.all_to_all_single(a2a_out, torch.arange(w, dtype=torch.float32, device=dev) + 10 * r)
assert a2a_out.cpu().tolist() == [float(r + 10 * k) for k in ranks]

if r == 0:
    dist.send(full(42.0), dst=3)
elif r == 3:
    got = full(0.0)
    dist.recv(got, src=0)
    assert got.cpu().tolist() == [42.0] * 4

gathered = [torch.empty(1, device=dev) for _ in ranks] if r == 0 else None
dist.gather(full(r, 1), gathered, dst=0)
if r == 0:
    assert [t.item() for t in gathered] == [float(k) for k in ranks]

scattered = torch.empty(1, device=dev)
dist.scatter(scattered, [full(10 + k, 1) for k in ranks] if r == 0 else None, src=0)
assert scattered.item() == 10.0 + r

# The work waits for queued producers: a fill queued just before the collective.
y = torch.empty(1024, device=dev)
y.fill_(float(r))
dist.all_reduce(y)
assert y.cpu().tolist() == [float(sum(ranks))] * 1024

# A sub-group of ranks on one chip.
pair = dist.new_group([0, 1])
if r in (0, 1):
    z = full(r + 1)
    dist.all_reduce(z, group=pair)
    assert z.cpu().tolist() == [3.0] * 4

dist.barrier()
assert vtrn.distributed.modeled_collective_seconds() > 0
print(f"rank {r} OK", flush=True)
dist.destroy_process_group()
