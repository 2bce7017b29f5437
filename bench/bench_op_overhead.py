"""Per-op overhead of a tiny op on `neuron` against the same op on `cpu`, in one process.

`x + 1` on a 1,000-element float32 tensor is all dispatch and bookkeeping, so the ratio is
what the device adds to every eager op. Prints the median time per op for each device and
their ratio; the machines are noisy, so only the ratio in one run means much.
"""

import statistics
import time
import warnings

import torch

ELEMENTS = 1_000
OPS_PER_SAMPLE = 2_000
SAMPLES = 15


def per_op_seconds(x: torch.Tensor) -> float:
    samples = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        for _ in range(OPS_PER_SAMPLE):
            x + 1
        if x.device.type == "neuron":
            torch.neuron.synchronize()
        samples.append((time.perf_counter() - start) / OPS_PER_SAMPLE)
    return statistics.median(samples)


def main():
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    cpu = torch.randn(ELEMENTS)
    neuron = cpu.to("neuron")
    for t in (cpu, neuron):  # warm up: first-use warnings, allocator, caches
        per_op_seconds(t)
    # Interleave the devices so drift on a noisy machine hits both alike.
    cpu_times, neuron_times = [], []
    for _ in range(3):
        cpu_times.append(per_op_seconds(cpu))
        neuron_times.append(per_op_seconds(neuron))
    cpu_s, neuron_s = min(cpu_times), min(neuron_times)
    print(f"x + 1, {ELEMENTS} float32 elements")
    print(f"  cpu    {cpu_s * 1e6:8.2f} us/op")
    print(f"  neuron {neuron_s * 1e6:8.2f} us/op")
    print(f"  overhead ratio neuron/cpu: {neuron_s / cpu_s:.1f}x")


if __name__ == "__main__":
    main()
