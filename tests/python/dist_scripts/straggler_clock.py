"""Run under `vtrn run --nproc-per-node 2`: rank 1 computes longer before an all-reduce, so the
collective starts on both ranks' modeled clocks when rank 1 arrives, and rank 0 idles for the
difference."""

import os
import sys

import torch
import torch.distributed as dist

import vtrn
import vtrn.distributed

LAUNCH_US = 1.3  # the DMA guide's ~1,300 ns start cost, charged per executable launch

dist.init_process_group("neuron")
r = dist.get_rank()
dev = torch.device("neuron", torch.neuron.current_device())
a = torch.randn(256, 256, device=dev)
b = torch.randn(1024, 1024, device=dev)
grad = torch.randn(1 << 20, device=dev)  # 4 MiB to all-reduce
# Align the ranks' clocks: after a collective both timelines end at the same point; the host
# then waits for it and a new span starts there on both.
dist.all_reduce(torch.ones(1, device=dev))
torch.neuron.synchronize()
vtrn.reset_clock()
main = torch.neuron.current_stream().stream_id


def kernels_us():
    return vtrn.metrics()["modeled_device_time_us"]


def stream_state():
    clock = vtrn.clock()
    s = clock["streams"][main]
    return clock["origin_us"], s["end_us"], s["idle_us"], s["busy_total_us"]


m0 = kernels_us()
y = a @ a  # both ranks
if r == 1:
    z = b @ b  # rank 1's extra compute
m1 = kernels_us()
torch.neuron.synchronize()  # the host waits for the stream's end: the arrival stays where it is
origin, arrival, idle_before, busy_before = stream_state()
# By hand: each rank's stream ends one launch after the span's start per kernel, plus the cost
# model's time of its kernels.
kernels = 1 if r == 0 else 2
assert abs(arrival - (origin + kernels * LAUNCH_US + (m1 - m0))) <= 1e-6 * arrival, (
    arrival,
    origin,
    m1 - m0,
)
assert abs(idle_before - kernels * LAUNCH_US) <= 1e-6 * arrival, (idle_before, kernels)

c0 = vtrn.distributed.modeled_collective_seconds() * 1e6
dist.all_reduce(grad)
coll = vtrn.distributed.modeled_collective_seconds() * 1e6 - c0
_, end_after, idle_after, busy_after = stream_state()

# Exchange the arrivals (after the measurement: this all-gather moves the clocks too).
arrivals = torch.zeros(2, dtype=torch.float64, device=dev)
dist.all_gather_into_tensor(arrivals, torch.tensor([arrival], dtype=torch.float64, device=dev))
early, late = arrivals.cpu().tolist()
assert coll > 0 and late > early, (coll, early, late)
# By hand: rank 1's lead is its extra kernel, the cost model's time of the 1024^3 matmul (rank 0
# runs the same now to read it) plus one launch.
m2 = kernels_us()
z = b @ b
matmul = kernels_us() - m2
assert matmul > 0
assert abs((late - early) - (matmul + LAUNCH_US)) <= 1e-6 * late, (late - early, matmul)
# Both ranks start the all-reduce when the last (rank 1) arrives and end together.
assert abs(end_after - (late + coll)) <= 1e-6 * end_after, (end_after, late, coll)
assert abs(busy_after - (busy_before + coll)) <= 1e-6 * busy_after, (busy_after, busy_before)
# The early rank idles for the difference; the late one not at all.
waited = late - early if r == 0 else 0.0
assert abs(idle_after - (idle_before + waited)) <= 1e-6 * end_after, (
    idle_after,
    idle_before,
    waited,
)
dist.destroy_process_group()
os.write(
    sys.stdout.fileno(),
    f"rank {r} OK arrival {arrival:.3f} us, start {late:.3f} us, idle +{waited:.3f} us\n".encode(),
)
