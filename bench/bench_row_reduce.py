"""Row reductions on `neuron` against the same ops on `cpu`, in one process.

`x.mean(-1)` and `x.sum(-1)` over float32 rows as RMSNorm and LayerNorm take them (256 to 4096
elements per row), `torch.softmax(x, -1)` over attention-score rows, and `log_softmax(x, -1)`
over a cross-entropy's logits (the Llama example's vocabulary of 1024, and 32000 as Llama 2's). vtrn sums a row in
ATen's own order (runtime/aten_sum.h), so both devices do the same additions. Prints, per case,
the fastest of several interleaved samples for each device and their ratio; the machines are
noisy, so only the ratio in one run means much.

    python bench/bench_row_reduce.py
"""

import time
import warnings

import torch

SAMPLES = 7
SECONDS_PER_SAMPLE = 0.2

CASES = [
    ("mean(-1)", (4096, 256), lambda x: x.mean(-1, keepdim=True)),
    ("mean(-1)", (1024, 4096), lambda x: x.mean(-1, keepdim=True)),
    ("sum(-1)", (1024, 256), lambda x: x.sum(-1)),
    ("softmax(-1)", (256, 128), lambda x: torch.softmax(x, -1)),
    ("log_softmax(-1)", (1024, 1024), lambda x: torch.log_softmax(x, -1)),
    ("log_softmax(-1)", (256, 32000), lambda x: torch.log_softmax(x, -1)),
]


def seconds_per_call(fn, x: torch.Tensor, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        r = fn(x)
    if x.device.type == "neuron":
        torch.neuron.synchronize()
    del r
    return (time.perf_counter() - start) / calls


def best_per_device(fn, shape) -> dict:
    """Seconds per call of |fn| on a float32 tensor of |shape| on each device: the fastest of
    SAMPLES interleaved samples."""
    xs = {
        d: torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(d)
        for d in ("cpu", "neuron")
    }
    calls = {}
    for d, x in xs.items():  # warm up (compile on neuron) and size a sample
        seconds_per_call(fn, x, 3)
        calls[d] = max(1, int(SECONDS_PER_SAMPLE / max(seconds_per_call(fn, x, 5), 1e-7)))
    best = {d: float("inf") for d in xs}
    for _ in range(SAMPLES):
        for d, x in xs.items():
            best[d] = min(best[d], seconds_per_call(fn, x, calls[d]))
    return best


def main() -> None:
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import vtrn  # noqa: F401  registers the neuron device

    print(f"{'op':16s} {'shape':>12s} {'cpu us':>9s} {'neuron us':>10s} {'neuron/cpu':>11s}")
    for name, shape, fn in CASES:
        best = best_per_device(fn, shape)
        print(
            f"{name:16s} {str(shape):>12s} {best['cpu'] * 1e6:9.1f} "
            f"{best['neuron'] * 1e6:10.1f} {best['neuron'] / best['cpu']:10.2f}x"
        )


if __name__ == "__main__":
    main()
