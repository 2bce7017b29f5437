"""Matrix products on `neuron` against `cpu`, and bf16 against float32 on each.

In one process, interleaved so that load from elsewhere hits every variant alike: torch.mm of
two 1024x1024 matrices (the size is an argument) in float32 and bfloat16, on cpu and neuron,
each the best of |rounds| medians of |iters| calls (neuron synchronizes after each call).

Target: on neuron, bf16 at least 1.5x faster than float32 (the CPU's bf16 instructions pay off).

    python bench/bench_matmul.py
    OMP_NUM_THREADS=1 python bench/bench_matmul.py --size 512
"""

import argparse
import statistics
import time

import torch

BF16_SPEEDUP_TARGET = 1.5


def time_mm(a, b, iters):
    samples = []
    for _ in range(iters):
        start = time.perf_counter()
        torch.mm(a, b)
        if a.device.type == "neuron":
            torch.neuron.synchronize()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = args.size
    g = torch.Generator().manual_seed(0)
    host = [torch.randn(n, n, generator=g) for _ in range(2)]
    variants = {}
    for device in ("cpu", "neuron"):
        for dtype in (torch.float32, torch.bfloat16):
            variants[(device, dtype)] = [t.to(device=device, dtype=dtype) for t in host]
    for a, b in variants.values():  # warm-up: compiles, first-touch pages
        time_mm(a, b, 1)
    best = {key: float("inf") for key in variants}
    for _ in range(args.rounds):
        for key, (a, b) in variants.items():
            best[key] = min(best[key], time_mm(a, b, args.iters))
    print(
        f"torch.mm {n}x{n}x{n}, median of {args.iters}, best of {args.rounds}; "
        f"torch threads {torch.get_num_threads()}"
    )
    for (device, dtype), seconds in best.items():
        gflops = 2 * n**3 / seconds / 1e9
        print(f"  {device:6s} {str(dtype):15s} {seconds * 1e3:8.2f} ms  {gflops:7.1f} GFLOP/s")
    for device in ("cpu", "neuron"):
        speedup = best[(device, torch.float32)] / best[(device, torch.bfloat16)]
        line = f"  {device:6s} bf16 speedup over float32: {speedup:5.2f}x"
        if device == "neuron":
            ok = "ok" if speedup >= BF16_SPEEDUP_TARGET else "MISS"
            line += f"   target >= {BF16_SPEEDUP_TARGET}x  {ok}"
        print(line)
    for dtype in (torch.float32, torch.bfloat16):
        ratio = best[("neuron", dtype)] / best[("cpu", dtype)]
        print(f"  neuron / cpu, {str(dtype):15s} {ratio:5.2f}x")


if __name__ == "__main__":
    main()
