"""float32 torch.sum and torch.mean on `neuron` give the CPU's bits where ATen sums a contiguous
row: the reduce they lower to is marked `vtrn.math = "cascade_sum"` and the executor adds each
row's elements in the order of ATen's cascade sum (runtime/aten_sum.h), with the vector width
of the kernels ATen runs on this CPU. Lengths cover rows shorter than a vector, tails, the
level carries, and rows past ATen's parallel grain; 1 and 2 threads."""

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


def test_the_correctly_rounded_sum_is_not_the_cpus():
    """The float64 sum rounded once differs from ATen's float32 sum on these rows, so the tests
    above can tell an accurate sum in another order from ATen's."""
    x = torch.randn(3, 20000, generator=torch.Generator().manual_seed(1)) * 3 + 1
    assert not bits_equal(x.double().sum(-1).float(), x.sum(-1))
