"""Run under `vtrn run --nproc-per-node 2`: a compute stream and a collective stream overlap on
the modeled clock, and the step is shorter than the sum of its parts by the overlap."""

import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist

import vtrn
import vtrn.distributed

LAUNCH_US = 1.3  # the DMA guide's ~1,300 ns start cost, charged per executable launch

dist.init_process_group("neuron")
r = dist.get_rank()
dev = torch.device("neuron", torch.neuron.current_device())
a = torch.randn(768, 768, device=dev)
grad = torch.randn(1 << 22, device=dev)  # 16 MiB to all-reduce
torch.neuron.synchronize()
vtrn.reset_clock()


def kernels_us():
    return vtrn.metrics()["modeled_device_time_us"]


def collective_us():
    return vtrn.distributed.modeled_collective_seconds() * 1e6


main = torch.neuron.current_stream()
comm = torch.neuron.Stream()
start, end = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)
ready = torch.neuron.Event()

m0 = kernels_us()
start.record()
y = a @ a  # k1: what the collective waits for
ready.record()
m1 = kernels_us()
y = y @ a  # k2 and k3 overlap the collective
y = y @ a
m2 = kernels_us()
comm.wait_event(ready)
c0 = collective_us()
with torch.neuron.stream(comm):
    dist.all_reduce(grad)
c1 = collective_us()
main.wait_stream(comm)
end.record()
end.synchronize()

k1 = m1 - m0 + LAUNCH_US  # the stream's time for k1, launch included
k23 = m2 - m1 + 2 * LAUNCH_US
coll = c1 - c0
assert k1 > 0 and k23 > 0 and coll > 0, (k1, k23, coll)
# By hand: the collective starts when k1 ends, beside k2 and k3.
overlap = min(k23, coll)
step_us = start.elapsed_time(end) * 1e3
parts = k1 + k23 + coll
assert abs(step_us - (parts - overlap)) <= 1e-6 * parts, (step_us, parts, overlap)
assert overlap > 0 and step_us < parts

clock = vtrn.clock()
busy_main = clock["streams"][main.stream_id]["busy_us"]
busy_comm = clock["streams"][comm.stream_id]["busy_us"]
assert abs(busy_comm["collective"] - coll) <= 1e-6 * coll, (busy_comm, coll)
assert abs(sum(busy_main.values()) - (m2 - m0)) <= 1e-6 * m2, (busy_main, m2 - m0)
assert abs(clock["span_us"] - step_us) <= 1e-6 * step_us, (clock["span_us"], step_us)

# In a profile, the collective is a device event on a track of its own (tid 1000 + stream).
with torch.profiler.profile(
    activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
) as prof:
    with torch.neuron.stream(comm):
        dist.all_reduce(grad)
    torch.neuron.synchronize()
path = os.path.join(tempfile.mkdtemp(), f"rank{r}.json")
prof.export_chrome_trace(path)
with open(path) as f:
    events = json.load(f)["traceEvents"]
reduces = [e for e in events if e.get("cat") == "kernel" and e["name"] == "all_reduce"]
assert len(reduces) == 1, reduces
assert reduces[0]["tid"] == 1000 + comm.stream_id, reduces[0]
assert abs(reduces[0]["dur"] - coll) <= 1e-3, (reduces[0], coll)  # the same 16 MiB all-reduce
dist.destroy_process_group()
os.write(sys.stdout.fileno(), f"rank {r} OK step {step_us:.3f} us, parts {parts:.3f} us\n".encode())
