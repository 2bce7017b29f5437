"""float32 softmax and log_softmax over the last dim, and their backwards, on `neuron` give the
CPU's bits: they lower to `custom_call @vtrn.aten_softmax`, which runs ATen's own kernels
(compiler/aten_softmax.h; before, a formula of ops in ATen's order matched except the softmax
backward at one thread, 97-99% of the elements of many-row tensors). Lengths cover rows
shorter than a vector, tails and an LM vocabulary; 1 and 2 threads; eager, a view, and
torch.compile. Other dims and dtypes run other CPU kernels and are compared within float32
tolerances elsewhere."""

from __future__ import annotations

import pytest
import torch
from conftest import bits_equal

import vtrn  # noqa: F401 - registers the device

LENGTHS = [1, 3, 7, 8, 9, 16, 17, 31, 48, 100, 257, 1000, 16384, 16385, 32000]


def rows(n, count=4):
    g = torch.Generator().manual_seed(n)
    return torch.randn(count, n, generator=g) * 3


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_forward_rows_are_the_cpus(n, log, threads):
    f = torch.log_softmax if log else torch.softmax
    x = rows(n)
    assert bits_equal(f(x.to("neuron"), -1).cpu(), f(x, -1))


@pytest.mark.parametrize("n", [3, 17, 1000, 32000])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_backward_rows_are_the_cpus(n, log, threads):
    f = torch.log_softmax if log else torch.softmax
    x, g = rows(n), rows(n + 1, 4)[:, :n]
    grads = []
    for device in ("cpu", "neuron"):
        xd = x.to(device).detach().requires_grad_(True)
        f(xd, -1).backward(g.to(device))
        grads.append(xd.grad.cpu())
    assert bits_equal(grads[1], grads[0])


@pytest.mark.parametrize("shape", [(2, 4, 17, 17), (64, 33), (3, 1000)], ids=str)
def test_the_softmax_backward_of_many_rows_is_the_cpus(shape, threads):
    """BEiT's attention probabilities' gradient: at one thread the formula matched 97-99%."""
    g = torch.Generator().manual_seed(len(shape))
    y, grad = torch.softmax(torch.randn(shape, generator=g), -1), torch.randn(shape, generator=g)
    backward = torch.ops.aten._softmax_backward_data
    want = backward(grad, y, -1, torch.float32)
    assert bits_equal(backward(grad.to("neuron"), y.to("neuron"), -1, torch.float32).cpu(), want)


def test_a_transposed_view_and_a_compiled_graph_are_the_cpus():
    """The CPU makes a non-contiguous input contiguous first: the same rows, the same sums."""
    x = torch.randn(6, 40, 48, generator=torch.Generator().manual_seed(7))
    xn = x.to("neuron")
    assert bits_equal(
        torch.softmax(xn.transpose(0, 1), -1).cpu(), torch.softmax(x.transpose(0, 1), -1)
    )
    f = lambda t: torch.log_softmax(t * 2, -1)  # noqa: E731
    compiled = torch.compile(f, backend="neuron", fullgraph=True)
    assert bits_equal(compiled(xn).cpu(), f(x))


def test_other_dims_stay_within_tolerance():
    """softmax over a dim that is not the last runs ATen's other kernel (per-lane sums in order,
    a division): not matched bit for bit, but close."""
    x = torch.randn(33, 20, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(torch.softmax(x.to("neuron"), 0).cpu(), torch.softmax(x, 0))
