"""torch.linalg.vector_norm of order 2 and 1 on `neuron` gives the CPU's bits for float32 and
bfloat16 (the result in the input's type): the lowering emits `custom_call @vtrn.aten_norm`,
which sums each row in the order ATen's CPU norm kernel takes it: the last-dim fast path
(8 float lanes, then the tail in groups of 4 and fused multiply-adds) where the reduced dims
are the trailing ones, the scalar loop elsewhere (compiler/aten_norm.h). So do _foreach_norm,
clip_grad_norm_ and F.normalize, which call it. Lengths cover rows shorter than a vector, every
tail length, bfloat16's 16-element steps and rows past ATen's parallel grain; 1 and 2 threads."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import bits_equal

import vtrn  # noqa: F401 - registers the device

LENGTHS = [1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 15, 16, 17, 23, 31, 33, 100, 257, 1000, 4099]
LENGTHS += [40000, 100003]


def sample(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * 3).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n", LENGTHS)
def test_whole_tensor_norms_are_the_cpus(n, dtype, threads):
    x = sample((n,), dtype, n)
    xn = x.to("neuron")
    # Order 1 over 2^15 or more: see test_one_long_order_1_sum_stays_within_rounding.
    for ord in (2, 1) if n < 32768 else (2,):
        assert bits_equal(
            torch.linalg.vector_norm(xn, ord).cpu(), torch.linalg.vector_norm(x, ord)
        ), ord


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n", [1, 5, 13, 37, 256, 1000, 2053])
def test_row_norms_are_the_cpus(n, dtype, threads):
    """Rows over the last dim (clip_grad_norm_'s per-parameter norms are whole tensors; RMS-style
    norms and F.normalize take rows), 70 of them: enough to split between threads."""
    x = sample((70, n), dtype, n)
    xn = x.to("neuron")
    for ord in (2, 1):
        for keepdim in (False, True):
            want = torch.linalg.vector_norm(x, ord, -1, keepdim)
            assert bits_equal(torch.linalg.vector_norm(xn, ord, -1, keepdim).cpu(), want), ord
    assert bits_equal(F.normalize(xn, dim=-1).cpu(), F.normalize(x, dim=-1))
    assert bits_equal(xn.norm(dim=-1).cpu(), x.norm(dim=-1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("dims", [(1, 2), (0,), (1,), (0, 2), (0, 1), (2,), (0, 1, 2)])
def test_norms_over_any_dims_are_the_cpus(dims, dtype, threads):
    """Trailing dims coalesce into ATen's fast path; leading or interleaved dims take its scalar
    loop, each output's elements in row-major order."""
    x = sample((9, 33, 17), dtype, len(dims))
    xn = x.to("neuron")
    for ord in (2, 1):
        for keepdim in (False, True):
            want = torch.linalg.vector_norm(x, ord, dims, keepdim)
            got = torch.linalg.vector_norm(xn, ord, dims, keepdim).cpu()
            assert bits_equal(got, want), (ord, keepdim)


def test_size_one_dims_do_not_change_the_path(threads):
    """[4, 1, 300] over dims (2,) and [4, 300, 1] over (1,): both rows of 300, the fast path."""
    for shape, dims in (((4, 1, 300), (2,)), ((4, 300, 1), (1,)), ((1, 4, 300), (0, 2))):
        x = sample(shape, torch.float32, 3)
        assert bits_equal(
            torch.linalg.vector_norm(x.to("neuron"), 2, dims).cpu(),
            torch.linalg.vector_norm(x, 2, dims),
        )


def test_foreach_norm_and_clip_grad_norm_are_the_cpus(threads):
    """clip_grad_norm_: _foreach_norm of each gradient, the norm of those norms, then every
    gradient scaled by max_norm / (total + 1e-6): with the same gradients on both devices, the
    norms and the clipped gradients are the CPU's bits."""
    shapes = [(257, 300), (257,), (13, 257), (13,), (4096,), (3, 5, 7)]
    grads = [sample(s, torch.float32, i) for i, s in enumerate(shapes)]
    out = {}
    for device in ("cpu", "neuron"):
        params = [torch.nn.Parameter(torch.zeros(s, device=device)) for s in shapes]
        for p, g in zip(params, grads):
            p.grad = g.clone().to(device)  # clipping scales it in place
        norms = torch._foreach_norm([p.grad for p in params], 2)
        total = torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
        out[device] = [n.cpu() for n in norms] + [total.cpu()] + [p.grad.cpu() for p in params]
    for a, b in zip(out["neuron"], out["cpu"]):
        assert bits_equal(a, b)


def test_one_long_order_1_sum_stays_within_rounding():
    """Order 1 over one output of 2^15 elements or more: ATen splits the sum between its threads
    (binary_kernel_reduce), so the executor's tree sums it, at least as accurately."""
    x = sample((100003,), torch.float32, 1)
    exact = x.double().abs().sum()
    got = torch.linalg.vector_norm(x.to("neuron"), 1).cpu().double()
    cpu = torch.linalg.vector_norm(x, 1).double()
    assert abs(got - exact) <= abs(cpu - exact) + 1e-7 * exact
