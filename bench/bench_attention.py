"""scaled_dot_product_attention, `neuron` against `cpu`, in one process.

Shapes below TorchNeuron's flash-kernel lengths (multiples of 512), where vtrn runs the module
through HBM (compiler/attention_through_memory.h) and the CPU its flash attention: the Llama
bench's causal attention [8, 8, 128, 32] forward and forward + backward, a grouped-query one,
and a non-causal one. Prints, per case, the fastest of several interleaved samples and the
ratio; the machines are noisy, so only ratios within one run mean much. Run it with
OMP_NUM_THREADS=1 for the single-threaded figures.

    python bench/bench_attention.py
"""

import warnings

import torch
import torch.nn.functional as F
from bench_row_reduce import seconds_per_call  # the same timing loop

SAMPLES = 7
SECONDS_PER_SAMPLE = 0.3


def forward(k, v, causal):
    return lambda q: F.scaled_dot_product_attention(
        q, k, v, is_causal=causal, enable_gqa=k.shape[1] != q.shape[1]
    )


def forward_backward(k, v, causal):
    def step(q):
        out = forward(k, v, causal)(q)
        out.backward(torch.ones_like(out))
        return out

    return step


CASES = [
    # name, (batch, heads, kv heads, length, head size), causal, with the backward
    ("llama causal fwd", (8, 8, 8, 128, 32), True, False),
    ("llama causal fwd+bwd", (8, 8, 8, 128, 32), True, True),
    ("gqa causal fwd+bwd", (4, 8, 2, 256, 64), True, True),
    ("full fwd", (4, 8, 8, 256, 64), False, False),
]


def main() -> None:
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import vtrn  # noqa: F401  registers the neuron device

    print(f"{'case':22s} {'cpu us':>9s} {'neuron us':>10s} {'neuron/cpu':>11s}")
    for name, (b, h, hk, n, d), causal, backward in CASES:
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(b, heads, n, d, generator=g) for heads in (h, hk, hk))
        fns, xs = {}, {}
        for dev in ("cpu", "neuron"):
            xs[dev] = q.to(dev).requires_grad_(backward)
            kd, vd = k.to(dev), v.to(dev)
            fns[dev] = (forward_backward if backward else forward)(kd, vd, causal)
        calls = {}
        for dev in fns:  # warm up (compile on neuron) and size a sample
            seconds_per_call(fns[dev], xs[dev], 3)
            per = seconds_per_call(fns[dev], xs[dev], 3)
            calls[dev] = max(1, int(SECONDS_PER_SAMPLE / max(per, 1e-7)))
        best = {dev: float("inf") for dev in fns}
        for _ in range(SAMPLES):
            for dev in fns:
                best[dev] = min(best[dev], seconds_per_call(fns[dev], xs[dev], calls[dev]))
        print(
            f"{name:22s} {best['cpu'] * 1e6:9.1f} {best['neuron'] * 1e6:10.1f} "
            f"{best['neuron'] / best['cpu']:10.2f}x"
        )


if __name__ == "__main__":
    main()
