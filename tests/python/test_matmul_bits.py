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


# torch.addmm and a linear layer with a bias: ATen's one sgemm onto the bias (beta 1), which
# vtrn runs as the same call (compiler/aten_addmm.h). (1, k, 1) is left out: see docs/compiler.md.
ADDMM_MKN = [(7, 5, 3), (5, 1, 4), (64, 64, 48), (333, 1000, 77), (1024, 256, 688), (64, 3072, 768)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mkn", ADDMM_MKN)
def test_a_biased_linear_is_the_cpus(mkn, threads):
    m, k, n = mkn
    g = torch.Generator().manual_seed(k)
    x, w, b = (
        torch.randn(m, k, generator=g),
        torch.randn(n, k, generator=g),
        torch.randn(n, generator=g),
    )
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        want = F.linear(x, w, b)
        got = F.linear(x.to("neuron"), w.to("neuron"), b.to("neuron")).cpu()
    finally:
        torch.set_num_threads(before)
    assert bits_equal(got, want)


def test_the_product_and_then_the_bias_is_not_the_cpus():
    """What vtrn computed before: the product, then the bias added. It differs from ATen's in
    most elements at a GPT-2 MLP's shape, so the test above can tell the two apart."""
    g = torch.Generator().manual_seed(0)
    x, w, b = (
        torch.randn(64, 3072, generator=g),
        torch.randn(768, 3072, generator=g),
        torch.randn(768, generator=g),
    )
    assert (F.linear(x, w, b) != x @ w.t() + b).float().mean() > 0.1


@pytest.mark.parametrize(
    "beta, alpha, self_shape, weight_transposed",
    [
        (1.0, 1.0, (48,), False),
        (0.5, 1.5, (1, 48), True),
        (2.0, -1.0, (33, 48), False),
        (1.0, 0.25, (33, 1), True),
    ],
)
def test_addmm_with_beta_alpha_and_broadcast_self_is_the_cpus(
    beta, alpha, self_shape, weight_transposed
):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(33, 200, generator=g)
    w = layouts((200, 48), weight_transposed, g)
    s = torch.randn(self_shape, generator=g)
    want = torch.addmm(s, x, w, beta=beta, alpha=alpha)
    got = torch.addmm(s.to("neuron"), x.to("neuron"), w.to("neuron"), beta=beta, alpha=alpha)
    assert bits_equal(got.cpu(), want)


def test_addmm_with_beta_0_never_reads_self():
    g = torch.Generator().manual_seed(2)
    x, w = torch.randn(20, 30, generator=g), torch.randn(30, 10, generator=g)
    s = torch.full((20, 10), float("nan"))
    got = torch.addmm(s.to("neuron"), x.to("neuron"), w.to("neuron"), beta=0).cpu()
    assert not got.isnan().any()
    assert bits_equal(got, torch.addmm(s, x, w, beta=0))


def test_a_3d_linear_and_gpt2s_conv1d_are_the_cpus():
    """at::linear folds a contiguous [b, s, k] input to one addmm; HF GPT-2's Conv1D calls
    torch.addmm(bias, x.view(-1, k), weight) with the weight stored [k, n]."""
    g = torch.Generator().manual_seed(3)
    x, w, b = (
        torch.randn(4, 50, 128, generator=g),
        torch.randn(384, 128, generator=g),
        torch.randn(384, generator=g),
    )
    got = F.linear(x.to("neuron"), w.to("neuron"), b.to("neuron")).cpu()
    assert bits_equal(got, F.linear(x, w, b))
    wc = torch.randn(128, 384, generator=g)
    want = torch.addmm(b, x.view(-1, 128), wc)
    assert bits_equal(
        torch.addmm(b.to("neuron"), x.to("neuron").view(-1, 128), wc.to("neuron")).cpu(), want
    )


def test_a_compiled_linear_stack_is_the_cpus():
    """torch.compile(backend="neuron"): the graph's t + addmm nodes lower to the same call, the
    weight read where it lies."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.Tanh(), torch.nn.Linear(96, 32))
    x = torch.randn(40, 64)
    want = model(x)
    compiled = torch.compile(model.to("neuron"), backend="neuron", fullgraph=True)
    assert bits_equal(compiled(x.to("neuron")).cpu(), want)
