"""Activation functions and their backwards on `neuron` against the same ops on `cpu`, in one
process.

Each op is one fused loop on `neuron` whose instructions each pass over a chunk of the tensor
(runtime/kernels_fused.cc); the longer ones (exact GELU: erf's polynomial, an exp, about twenty
instructions) are the loops whose scratch decides their speed. The shape is the MLP activation
of examples/llama_step.py at size "bench" ([8, 128, 688] float32, 2.7 MiB), and a smaller one
that stays in L2. Prints, per case, the fastest of several interleaved samples for each device
and their ratio; the machines are noisy, so only the ratio in one run means much.

    OMP_NUM_THREADS=1 python bench/bench_activations.py
"""

import warnings

import torch
import torch.nn.functional as F
from bench_row_reduce import best_per_device  # the same interleaved timing

SHAPES = [(8, 128, 688), (64, 688)]

OPS = [
    ("sigmoid", torch.sigmoid),
    ("silu", F.silu),
    ("silu_backward", lambda x: torch.ops.aten.silu_backward(x, x)),
    ("gelu", F.gelu),
    ("gelu_backward", lambda x: torch.ops.aten.gelu_backward(x, x)),
    ("gelu tanh", lambda x: F.gelu(x, approximate="tanh")),
]


def main() -> None:
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import vtrn  # noqa: F401  registers the neuron device

    print(f"torch threads {torch.get_num_threads()}")
    print(f"{'op':14s} {'shape':>14s} {'cpu us':>9s} {'neuron us':>10s} {'neuron/cpu':>11s}")
    for shape in SHAPES:
        for name, fn in OPS:
            best = best_per_device(fn, shape)
            print(
                f"{name:14s} {str(shape):>14s} {best['cpu'] * 1e6:9.1f} "
                f"{best['neuron'] * 1e6:10.1f} {best['neuron'] / best['cpu']:10.2f}x"
            )


if __name__ == "__main__":
    main()
