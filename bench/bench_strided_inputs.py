"""Elementwise ops on non-contiguous views, `neuron` against `cpu`, in one process.

The views a Llama step feeds elementwise ops: a rotary embedding's even and odd halves of a
transposed q/k projection (a step of 2 on the last dim), a transposed head split, an expand.
vtrn's fused loops read such a view where it lies (runtime/executor.h, input strides); the
baseline "neuron, packed" first makes it contiguous and runs the op on the copy, which is what
eager mode did before. Prints, per case, the fastest of several interleaved samples and the
ratios; the machines are noisy, so only ratios within one run mean much.

    python bench/bench_strided_inputs.py
"""

import warnings

import torch
from bench_row_reduce import seconds_per_call  # the same timing loop

SAMPLES = 7
SECONDS_PER_SAMPLE = 0.2


def inputs(device):
    g = torch.Generator().manual_seed(0)
    proj = torch.randn(8, 128, 8, 32, generator=g).to(device)
    cos = torch.randn(128, 16, generator=g).to(device)
    heads = torch.randn(8, 128, 8, 16, generator=g).to(device)
    col = torch.randn(8, 128, 1, generator=g).to(device)
    return {
        "rotary half * cos": (lambda a: a * cos, proj.transpose(1, 2)[..., ::2]),
        "-(odd rotary half)": (lambda a: -a, proj.transpose(1, 2)[..., 1::2]),
        "transposed - itself": (lambda a: a - a * 0.5, heads.transpose(1, 2)),
        "expand / 256": (lambda a: a / 256.0, col.expand(8, 128, 256)),
    }


def main() -> None:
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import vtrn  # noqa: F401  registers the neuron device

    modes = {"cpu": ("cpu", False), "neuron": ("neuron", False), "packed": ("neuron", True)}
    cases = {d: inputs(d) for d in ("cpu", "neuron")}
    print(
        f"{'case':20s} {'cpu us':>8s} {'neuron us':>10s} {'packed us':>10s} "
        f"{'neuron/cpu':>11s} {'neuron/packed':>14s}"
    )

    def case(m, name):
        fn, x = cases[modes[m][0]][name]
        return (lambda a: fn(a.contiguous())) if modes[m][1] else fn, x

    for name in cases["cpu"]:
        calls, best = {}, {}
        for m in modes:  # warm up (compile on neuron) and size a sample
            fn, x = case(m, name)
            seconds_per_call(fn, x, 3)
            calls[m] = max(1, int(SECONDS_PER_SAMPLE / max(seconds_per_call(fn, x, 5), 1e-7)))
            best[m] = float("inf")
        for _ in range(SAMPLES):
            for m in modes:
                fn, x = case(m, name)
                best[m] = min(best[m], seconds_per_call(fn, x, calls[m]))
        print(
            f"{name:20s} {best['cpu'] * 1e6:8.1f} {best['neuron'] * 1e6:10.1f} "
            f"{best['packed'] * 1e6:10.1f} {best['neuron'] / best['cpu']:10.2f}x "
            f"{best['neuron'] / best['packed']:13.2f}x"
        )


if __name__ == "__main__":
    main()
