"""Binary ops between a tensor and its own per-row value broadcast along the rows
(x.amax(-1, keepdim=True)), for test_row_values.py, in its process and in an AEE-on child."""

import torch

SHAPES = [(8, 48), (3, 5, 1000), (4, 6, 64, 48), (2, 5000)]
OPS = {
    "add": lambda x, m: x + m,
    "radd": lambda x, m: m + x,
    "sub": lambda x, m: x - m,
    "rsub": lambda x, m: m - x,
    # alpha 2: eager subtract's fma(m, -alpha, x) with an exact product. (With an inexact one,
    # ATen rounds twice in the tail of each row against a broadcast operand and once elsewhere;
    # vtrn rounds once everywhere, a last-bit difference left open.)
    "sub_alpha": lambda x, m: torch.sub(x, m, alpha=2),
    "mul": lambda x, m: x * m,
    "div": lambda x, m: x / m,
    "rdiv": lambda x, m: m / x,
    "maximum": lambda x, m: torch.maximum(x, m),
    "rminimum": lambda x, m: torch.minimum(m, x),
    "softmax_by_hand": lambda x, m: (x - m).exp() / (x - m).exp().sum(-1, keepdim=True),
}


def mismatches(device):
    """'op shape: max error' for every case whose result on |device| is not the CPU's."""
    bad = []
    for shape in SHAPES:
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(len(shape)))
        for name, op in OPS.items():
            want = op(x, x.amax(-1, keepdim=True))
            n = x.to(device)
            got = op(n, n.amax(-1, keepdim=True)).cpu()
            if not torch.equal(got, want):
                bad.append(f"{name} {shape}: max error {(got - want).abs().max().item()}")
    return bad
