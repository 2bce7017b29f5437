"""Allocation and free of 1 MiB blocks: neuron's caching allocator against the CPU allocator,
in one process. Prints the time per alloc+free pair for each and their ratio."""

import statistics
import time

import torch

ELEMENTS = (1 << 20) // 4  # 1 MiB of float32
PAIRS = 5_000


def per_pair_seconds(device: str) -> float:
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(PAIRS):
            t = torch.empty(ELEMENTS, device=device)
            del t
        samples.append((time.perf_counter() - start) / PAIRS)
    return statistics.median(samples)


def main():
    per_pair_seconds("neuron")  # warm the cache
    per_pair_seconds("cpu")
    cpu_s = min(per_pair_seconds("cpu") for _ in range(3))
    neuron_s = min(per_pair_seconds("neuron") for _ in range(3))
    print("torch.empty(1 MiB) + free")
    print(f"  cpu    {cpu_s * 1e6:8.2f} us/pair")
    print(f"  neuron {neuron_s * 1e6:8.2f} us/pair (caching allocator, HBM budget checked)")
    print(f"  ratio neuron/cpu: {neuron_s / cpu_s:.2f}x")


if __name__ == "__main__":
    main()
