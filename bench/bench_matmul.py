"""Matrix products on `neuron` against `cpu`, and bf16 against float32 on each.

In one process, interleaved so that load from elsewhere hits every variant alike: torch.mm of
two 1024x1024 matrices (the size is an argument) in float32 and bfloat16, on cpu and neuron,
each the best of |rounds| medians of |iters| calls (neuron synchronizes after each call).

Target: on neuron, bf16 at least 1.5x faster than float32 (the CPU's bf16 instructions pay off).

Then the float32 products of examples/llama_step.py (size bench) in the layouts the step gives
them: weight gradients read the activation transposed, forward products the weight transposed.


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


# (m, k, n, layout): "ta" the lhs is a transposed view, "tb" the rhs, "nn" neither.
LLAMA_PRODUCTS = [
    (1024, 1024, 256, "ta"),
    (1024, 256, 688, "tb"),
    (688, 1024, 256, "ta"),
    (256, 1024, 256, "ta"),
    (1024, 688, 256, "nn"),
    (1024, 256, 256, "tb"),
    (1024, 256, 1024, "tb"),
    (256, 1024, 688, "ta"),
]


def llama_products(iters, rounds):
    g = torch.Generator().manual_seed(0)
    operands = {}
    for m, k, n, layout in LLAMA_PRODUCTS:
        a = torch.randn(k, m, generator=g).t() if layout == "ta" else torch.randn(m, k, generator=g)
        b = torch.randn(n, k, generator=g).t() if layout == "tb" else torch.randn(k, n, generator=g)
        for device in ("cpu", "neuron"):
            # .to keeps a transposed view's strides
            operands[(m, k, n, layout, device)] = (a.to(device), b.to(device))
    for a, b in operands.values():
        time_mm(a, b, 1)
    best = {key: float("inf") for key in operands}
    for _ in range(rounds):
        for key, (a, b) in operands.items():
            best[key] = min(best[key], time_mm(a, b, iters))
    print("float32 products of the Llama step (size bench), ms")
    total = {"cpu": 0.0, "neuron": 0.0}
    for m, k, n, layout in LLAMA_PRODUCTS:
        cpu, neuron = (best[(m, k, n, layout, d)] for d in ("cpu", "neuron"))
        total["cpu"] += cpu
        total["neuron"] += neuron
        print(
            f"  {m:5d}x{k:<5d} by {k:5d}x{n:<5d} {layout}   cpu {cpu * 1e3:6.2f}   "
            f"neuron {neuron * 1e3:6.2f}   {neuron / cpu:5.2f}x"
        )
    print(f"  all of them: neuron / cpu {total['neuron'] / total['cpu']:5.2f}x")


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
    llama_products(args.iters, args.rounds)


if __name__ == "__main__":
    main()
