"""float32 torch.sum and torch.mean on `neuron` give the CPU's bits where ATen sums a contiguous
row: the reduce they lower to is marked `vtrn.math = "cascade_sum"` and the executor adds each
row's elements in the order of ATen's cascade sum (runtime/aten_sum.h), with the vector width
of the kernels ATen runs on this CPU; a sum over leading dims takes each column in ATen's order.
Lengths cover rows shorter than a vector, tails, the level carries, and rows past ATen's
parallel grain; 1 and 2 threads."""

from __future__ import annotations

import pytest
import torch
from conftest import bits_equal

import vtrn  # noqa: F401 - registers the device

# Rows within one chunk of a reduce's loop, then longer: up to 16384 one chunk of their own, past
# it gathered from chunks.
LENGTHS = [1, 3, 5, 7, 8, 9, 31, 33, 64, 100, 128, 255, 256, 257, 688, 1000]
LENGTHS += [1025, 4097, 16384, 16385, 20000, 40000]


def test_the_vector_width_is_atens():
    lanes = 16 if torch.backends.cpu.get_cpu_capability().startswith("AVX512") else 8
    assert vtrn._C._aten_vector_lanes() == lanes


@pytest.mark.parametrize("n", LENGTHS)
def test_row_sums_and_means_are_the_cpus(n, threads):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(3, n, generator=g) * 3 + 1
    xn = x.to("neuron")
    assert bits_equal(xn.sum(-1).cpu(), x.sum(-1))
    assert bits_equal(xn.mean(-1, keepdim=True).cpu(), x.mean(-1, keepdim=True))


@pytest.mark.parametrize("n", [3, 100, 255, 300, 333, 1000, 1023])
def test_many_short_rows_are_the_cpus(n, threads):
    """300 rows shorter than a chunk: a reduce's loop takes as many whole rows per chunk as its
    scratch allows (a multiple of 32 elements), so rows that do not divide 1024 no longer straddle
    chunks. Sums, means, maxima and log_softmax (whose loops sum exp(x - max) per row)."""
    g = torch.Generator().manual_seed(n)
    x = torch.randn(300, n, generator=g) * 3 + 1
    xn = x.to("neuron")
    assert bits_equal(xn.sum(-1).cpu(), x.sum(-1))
    assert bits_equal(xn.mean(-1, keepdim=True).cpu(), x.mean(-1, keepdim=True))
    assert bits_equal(xn.amax(-1).cpu(), x.amax(-1))
    assert bits_equal(torch.log_softmax(xn, -1).cpu(), torch.log_softmax(x, -1))


def test_empty_rows_reduce_to_the_cpus(threads):
    """Rows of no elements: a reduce's chunk of whole rows has no row length to count in (the
    loop once divided by it and died of SIGILL)."""
    for shape in ((5, 0), (5, 0, 0), (0, 7)):
        x = torch.randn(shape)
        xn = x.to("neuron")
        assert bits_equal(xn.sum(-1).cpu(), x.sum(-1))
        assert bits_equal(xn.mean(-1).cpu(), x.mean(-1))
        assert torch.log_softmax(xn, -1).cpu().shape == torch.log_softmax(x, -1).shape
    x = torch.randn(0, 7)
    assert bits_equal(x.to("neuron").amax(-1).cpu(), x.amax(-1))


@pytest.mark.parametrize("n", [1025, 4096, 16384, 16385])
def test_rows_of_values_computed_in_the_loop_are_the_cpus(n, threads):
    """Rows longer than a chunk of an elementwise loop, at and past the longest one summed as one
    chunk, read in place (eager) and computed by the reduce's own loop (compiled: the square is
    fused into the reduce)."""
    x = torch.randn(5, n, generator=torch.Generator().manual_seed(n))
    xn = x.to("neuron")
    assert bits_equal(xn.sum(-1).cpu(), x.sum(-1))
    square_sum = lambda t: (t * t).sum(-1)  # noqa: E731
    square_mean = lambda t: (t * t).mean(-1)  # noqa: E731
    assert bits_equal(square_sum(xn).cpu(), square_sum(x))
    compiled_sum = torch.compile(square_sum, backend="neuron", fullgraph=True)
    compiled_mean = torch.compile(square_mean, backend="neuron", fullgraph=True)
    assert bits_equal(compiled_sum(xn).cpu(), square_sum(x))
    assert bits_equal(compiled_mean(xn).cpu(), square_mean(x))


@pytest.mark.parametrize("n", [100, 5000, 32767])
def test_a_whole_tensor_sum_below_atens_grain_is_the_cpus(n, threads):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n))
    assert bits_equal(x.to("neuron").sum().cpu(), x.sum())


def test_rmsnorms_mean_of_squares_is_the_cpus(threads):
    """Llama's RMSNorm: x.pow(2).mean(-1, keepdim=True), fused with the square on neuron."""
    x = torch.randn(8, 128, 256, generator=torch.Generator().manual_seed(0))
    want = x.pow(2).mean(-1, keepdim=True)
    assert bits_equal(x.to("neuron").pow(2).mean(-1, keepdim=True).cpu(), want)
    norm = lambda t: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6)  # noqa: E731
    assert bits_equal(norm(x.to("neuron")).cpu(), norm(x))
    compiled = torch.compile(norm, backend="neuron", fullgraph=True)
    assert bits_equal(compiled(x.to("neuron")).cpu(), norm(x))


# Column sums: (rows, columns) over dim 0, and a 3-d tensor over its middle dim. Widths around
# ATen's groups of 32 columns (4 under 8), rows around the level carries (16 rows, 16 rounds of
# 4) and past 2^19 rows, where the levels carry every 32.
COLUMNS = [
    (r, c) for r in (1, 3, 4, 5, 16, 17, 64, 65, 257, 4097) for c in (1, 3, 5, 8, 9, 33, 100)
]
COLUMNS += [(70000, 3), (600000, 2), (1024, 256)]


@pytest.mark.parametrize("rows, cols", COLUMNS)
def test_column_sums_and_means_are_the_cpus(rows, cols, threads):
    """Each column in ATen's order (SumKernel.cpp's vectorized_outer_sum / scalar_outer_sum): it
    differed in the last bits on every shape with more than a few rows (the RMSNorm weight's
    gradient, (g * x).sum((0, 1)), among them)."""
    g = torch.Generator().manual_seed(rows * 1000 + cols)
    x = torch.randn(rows, cols, generator=g) * torch.logspace(-3, 3, rows).unsqueeze(1)
    xn = x.to("neuron")
    assert bits_equal(xn.sum(0).cpu(), x.sum(0))
    assert bits_equal(xn.mean(0, keepdim=True).cpu(), x.mean(0, keepdim=True))
    x3 = x.view(1, rows, cols).expand(3, rows, cols) * torch.tensor([1.0, -2.0, 0.5]).view(3, 1, 1)
    assert bits_equal(x3.to("neuron").sum(1).cpu(), x3.sum(1))


def test_the_norm_weights_gradient_is_the_cpus(threads):
    """An RMSNorm weight's gradient: the product and the sum over (batch, seq) in one loop on
    neuron, eager and compiled."""
    g = torch.Generator().manual_seed(3)
    grad, x = torch.randn(8, 128, 256, generator=g), torch.randn(8, 128, 256, generator=g)
    weight_grad = lambda a, b: (a * b).sum((0, 1))  # noqa: E731
    want = weight_grad(grad, x)
    assert bits_equal(weight_grad(grad.to("neuron"), x.to("neuron")).cpu(), want)
    compiled = torch.compile(weight_grad, backend="neuron", fullgraph=True)
    assert bits_equal(compiled(grad.to("neuron"), x.to("neuron")).cpu(), want)


# (logical shape, storage order, reduced dims, keepdim): a transposed view summed, each case
# with its kept dims in memory in their own order.
STRIDED = [
    ((2, 32, 4, 16), (0, 2, 1, 3), (0, 1, 2), True),  # Qwen3's query norm weight's gradient
    ((8, 128, 8, 32), (0, 2, 1, 3), (0, 1, 2), True),
    ((2, 128, 32), (0, 2, 1), (1,), False),
    ((2, 128, 32), (0, 2, 1), (0,), True),
    ((64, 33), (1, 0), (0,), False),
    ((64, 33), (1, 0), (0, 1), False),
    ((8, 8, 128, 32), (0, 2, 1, 3), (1, 3), False),
]


@pytest.mark.parametrize("shape, order, dims, keepdim", STRIDED)
def test_sums_of_a_transposed_view_add_in_its_storage_order(shape, order, dims, keepdim, threads):
    """The CPU's loop over a strided tensor follows memory: summed in row-major order instead,
    12% of Qwen3's norm weight gradient elements were the CPU's. The result's strides are the
    CPU's too."""
    g = torch.Generator().manual_seed(len(shape) * 100 + len(dims))
    base = torch.randn([shape[d] for d in order], generator=g) * 3 + 1
    x = base.permute([order.index(d) for d in range(len(order))])
    assert x.shape == shape and not x.is_contiguous()
    for op in (torch.sum, torch.mean):
        want = op(x, dims, keepdim=keepdim)
        got = op(x.to("neuron"), dims, keepdim=keepdim)
        assert bits_equal(got.cpu(), want), op
        assert got.stride() == want.stride(), op


def test_the_correctly_rounded_sum_is_not_the_cpus():
    """The float64 sum rounded once differs from ATen's float32 sum on these rows, so the tests
    above can tell an accurate sum in another order from ATen's."""
    x = torch.randn(3, 20000, generator=torch.Generator().manual_seed(1)) * 3 + 1
    assert not bits_equal(x.double().sum(-1).float(), x.sum(-1))
