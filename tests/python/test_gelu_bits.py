"""torch's exact GELU and its gradient on float32 `neuron` tensors give the CPU's bits: they
lower to `custom_call @vtrn.aten_gelu` / `@vtrn.aten_gelu_backward`, which run ATen's own CPU
kernel (oneDNN's gelu_erf in torch's build; an erf formula of StableHLO ops matched 29% of the
elements) (compiler/aten_gelu.h), and so do the tanh approximation and its gradient
(`@vtrn.aten_gelu_tanh`, `_backward`)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import bits_equal

import vtrn  # noqa: F401 - registers the device


@pytest.mark.parametrize("shape", [(1,), (7,), (33,), (1000,), (4, 128, 768), (70001,)])
def test_exact_gelu_and_its_gradient_are_the_cpus(shape, threads):
    g = torch.Generator().manual_seed(len(shape))
    x = torch.randn(shape, generator=g) * 3
    dy = torch.randn(shape, generator=g)
    xn, dyn = x.to("neuron"), dy.to("neuron")
    assert bits_equal(F.gelu(xn).cpu(), F.gelu(x))
    want = torch.ops.aten.gelu_backward(dy, x)
    assert bits_equal(torch.ops.aten.gelu_backward(dyn, xn).cpu(), want)
    # In place, and through autograd.
    assert bits_equal(F.gelu(xn.clone(), approximate="none").cpu(), F.gelu(x))
    xr = x.clone().requires_grad_()
    F.gelu(xr).backward(dy)
    xnr = x.to("neuron").requires_grad_()
    F.gelu(xnr).backward(dyn)
    assert bits_equal(xnr.grad.cpu(), xr.grad)


@pytest.mark.parametrize("shape", [(1,), (7,), (33,), (64,), (4, 128, 256), (8, 3072), (70001,)])
def test_tanh_gelu_and_its_gradient_are_the_cpus(shape, threads):
    """Gemma's and many HF models' activation (gelu_pytorch_tanh): before, the gradient matched
    about 70% of the elements and the forward only over ATen's whole vectors."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(shape, generator=g) * 3
    dy = torch.randn(shape, generator=g)
    xn, dyn = x.to("neuron"), dy.to("neuron")
    assert bits_equal(F.gelu(xn, approximate="tanh").cpu(), F.gelu(x, approximate="tanh"))
    want = torch.ops.aten.gelu_backward(dy, x, approximate="tanh")
    assert bits_equal(torch.ops.aten.gelu_backward(dyn, xn, approximate="tanh").cpu(), want)


def test_a_vit_mlp_is_the_cpus():
    """HF ViT's intermediate and output layers (linear, exact GELU, linear)."""
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(192, 768), torch.nn.GELU(), torch.nn.Linear(768, 192))
    x = torch.randn(2, 65, 192)
    import copy

    dev = copy.deepcopy(mlp).to("neuron")
    with torch.no_grad():
        assert bits_equal(dev(x.to("neuron")).cpu(), mlp(x))
