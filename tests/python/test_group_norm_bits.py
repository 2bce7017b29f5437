"""float32 group norm on `neuron` gives the CPU's bits: native_group_norm and its backward lower
to `custom_call @vtrn.aten_group_norm` / `_backward`, which run ATen's own CPU kernels
(compiler/aten_group_norm.h). As a formula of ops they matched 12-66% of the elements of HF
wav2vec2's group norm."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import bits_equal

import vtrn  # noqa: F401 - registers the device

CASES = [
    ((2, 16, 159), 4),
    ((2, 32, 64), 4),
    ((4, 64, 8, 8), 32),
    ((2, 6, 5, 5, 5), 3),
    ((3, 12), 6),
]


@pytest.mark.parametrize("shape, groups", CASES, ids=str)
def test_outputs_statistics_and_gradients_are_the_cpus(shape, groups, threads):
    g = torch.Generator().manual_seed(len(shape) * 10 + groups)
    x = torch.randn(shape, generator=g) * 3 + 1
    dy = torch.randn(shape, generator=g)
    gn = torch.nn.GroupNorm(groups, shape[1])
    with torch.no_grad():
        gn.weight.uniform_(-2, 2, generator=g)
        gn.bias.uniform_(-1, 1, generator=g)
    dev = copy.deepcopy(gn).to("neuron")
    xc, xn = x.clone().requires_grad_(), x.to("neuron").requires_grad_()
    y, yn = gn(xc), dev(xn)
    assert bits_equal(yn.detach().cpu(), y.detach())
    y.backward(dy)
    yn.backward(dy.to("neuron"))
    assert bits_equal(xn.grad.cpu(), xc.grad)
    assert bits_equal(dev.weight.grad.cpu(), gn.weight.grad)
    assert bits_equal(dev.bias.grad.cpu(), gn.bias.grad)
    n, c = shape[0], shape[1]
    hw = x[0, 0].numel()
    want = torch.ops.aten.native_group_norm(x, None, None, n, c, hw, groups, 1e-5)
    got = torch.ops.aten.native_group_norm(x.to("neuron"), None, None, n, c, hw, groups, 1e-5)
    for a, b in zip(got, want):  # the output, mean and rstd without affine parameters
        assert bits_equal(a.cpu(), b)


def test_a_bias_without_a_weight_gets_its_gradient():
    """The CPU's backward raises for it ("tensor does not have a device"); neuron gives the
    bias's gradient, the sum of the output's gradient over the batch and the spatial dims."""
    g = torch.Generator().manual_seed(5)
    x, dy, b = torch.randn(2, 4, 5, generator=g), torch.randn(2, 4, 5, generator=g), torch.randn(4)
    bn = b.to("neuron").requires_grad_()
    torch.nn.functional.group_norm(x.to("neuron"), 2, None, bn).backward(dy.to("neuron"))
    torch.testing.assert_close(bn.grad.cpu(), dy.sum((0, 2)))
