"""Stream-ordered reuse of freed device blocks: a loop of 1 MiB `y = x + 1` that runs ahead of
the stream's worker, on `neuron` and `cpu` in one process.

Each op allocates a fresh 1 MiB result and drops the previous one. CUDA's caching allocator
hands the dropped block to the next allocation on the same stream at once (stream order makes
that safe), so such a loop needs two blocks however far ahead of the device the host runs. A
device whose queued work kept every block it names until it ran would map a fresh block per op
while the host is ahead, with a page fault for each 4 KiB page first written.

For each device: microseconds and minor page faults (resource.getrusage) per op, over the first
--cold ops of a fresh process and over --warm later ops, each phase ending in a synchronize;
for neuron also the peak of reserved device memory.

    python bench/bench_stream_alloc.py
    python bench/bench_stream_alloc.py --cold 500 --warm 2000
"""

import argparse
import resource
import time

import torch

ELEMENTS = (1 << 20) // 4  # 1 MiB of float32


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def sync(device: str) -> None:
    if device == "neuron":
        torch.neuron.synchronize()


def phase(x: torch.Tensor, ops: int) -> tuple[float, float]:
    """(microseconds per op, minor page faults per op) of |ops| ops ending in a synchronize."""
    device = x.device.type
    sync(device)
    f0, t0 = faults(), time.perf_counter()
    y = x
    for _ in range(ops):
        y = x + 1
    sync(device)
    elapsed, faulted = time.perf_counter() - t0, faults() - f0
    del y
    return elapsed / ops * 1e6, faulted / ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=500, help="ops of the first phase")
    parser.add_argument("--warm", type=int, default=2000, help="ops of the second phase")
    args = parser.parse_args()

    xs = {d: torch.ones(ELEMENTS, device=d) for d in ("neuron", "cpu")}
    (xs["neuron"] + 1).cpu()  # compile the op before timing
    torch.neuron.reset_peak_memory_stats()
    rows = []
    for name, ops in (("cold", args.cold), ("warm", args.warm)):
        for device in ("neuron", "cpu"):  # interleaved, one machine state
            us, pf = phase(xs[device], ops)
            rows.append((name, ops, device, us, pf))
    peak = torch.neuron.memory_stats()["reserved_bytes.all.peak"]
    print(f"1 MiB y = x + 1, host running ahead of the stream (loadavg {loadavg()})")
    print(f"  {'phase':6} {'ops':>6} {'device':7} {'us/op':>9} {'faults/op':>10}")
    for name, ops, device, us, pf in rows:
        print(f"  {name:6} {ops:6d} {device:7} {us:9.1f} {pf:10.1f}")
    print(f"  neuron peak reserved: {peak / 2**20:.1f} MiB")


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


if __name__ == "__main__":
    main()
