"""float32 batch norm on `neuron` gives the CPU's bits: native_batch_norm and its backward lower
to `custom_call @vtrn.aten_batch_norm` / `_backward`, which run ATen's own CPU kernels
(compiler/aten_batch_norm.h). As a formula of ops they matched 6-60% of the elements of HF
ResNet's batch norms (outputs, saved statistics, running statistics and gradients), and
MobileNetV2's training drifted from the CPU's by 0.04."""

from __future__ import annotations

import copy
import pathlib
import sys

import pytest
import torch
from conftest import assert_trains_to_cpu_parameters, bits_equal

import vtrn  # noqa: F401 - registers the device

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import op_diff  # noqa: E402 - the tiny HF models it builds

SHAPES = [(2, 16, 32, 32), (8, 64, 7, 7), (4, 10), (3, 5, 100), (1, 3, 2, 2, 2)]


def batch_norm_for(shape):
    cls = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d}.get(
        len(shape), torch.nn.BatchNorm3d
    )
    bn = cls(shape[1], momentum=0.3)
    with torch.no_grad():
        bn.weight.uniform_(-2, 2)
        bn.bias.uniform_(-1, 1)
    return bn


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_training_and_evaluation_are_the_cpus(shape, threads):
    g = torch.Generator().manual_seed(len(shape))
    x = torch.randn(shape, generator=g) * 3 + 1
    dy = torch.randn(shape, generator=g)
    bn = batch_norm_for(shape)
    dev = copy.deepcopy(bn).to("neuron")
    xc, xn = x.clone().requires_grad_(), x.to("neuron").requires_grad_()
    for _ in range(2):  # the second step starts from the first's running statistics
        bn(xc).backward(dy)
        dev(xn).backward(dy.to("neuron"))
    assert bits_equal(dev(xn).detach().cpu(), bn(xc).detach())
    for name in ("running_mean", "running_var"):
        assert bits_equal(getattr(dev, name).cpu(), getattr(bn, name)), name
    assert bits_equal(xn.grad.cpu(), xc.grad)
    assert bits_equal(dev.weight.grad.cpu(), bn.weight.grad)
    assert bits_equal(dev.bias.grad.cpu(), bn.bias.grad)
    # The saved statistics, which autograd hands the backward.
    stats = (bn.running_mean.clone(), bn.running_var.clone())
    dev_stats = (dev.running_mean.clone(), dev.running_var.clone())
    want = torch.ops.aten.native_batch_norm(x, None, None, *stats, True, 0.1, 1e-5)
    got = torch.ops.aten.native_batch_norm(x.to("neuron"), None, None, *dev_stats, True, 0.1, 1e-5)
    for a, b in zip(got, want):
        assert bits_equal(a.cpu(), b)
    for a, b in zip(dev_stats, stats):  # updated in place
        assert bits_equal(a.cpu(), b)
    bn.eval(), dev.eval()
    with torch.no_grad():
        assert bits_equal(dev(x.to("neuron")).cpu(), bn(x))
    # Evaluation-mode gradients (a frozen batch norm).
    xc, xn = x.clone().requires_grad_(), x.to("neuron").requires_grad_()
    bn(xc).backward(dy)
    dev(xn).backward(dy.to("neuron"))
    assert bits_equal(xn.grad.cpu(), xc.grad)


def test_without_affine_parameters_or_running_statistics():
    x = torch.randn(4, 6, 5, 5, generator=torch.Generator().manual_seed(1))
    for bn in (
        torch.nn.BatchNorm2d(6, affine=False),
        torch.nn.BatchNorm2d(6, track_running_stats=False),
    ):
        dev = copy.deepcopy(bn).to("neuron")
        xc, xn = x.clone().requires_grad_(), x.to("neuron").requires_grad_()
        y, yn = bn(xc), dev(xn)
        assert bits_equal(yn.detach().cpu(), y.detach())
        # (A contiguous gradient: y.sum()'s is an expanded one, for which the CPU's kernel takes
        # another path, while the device's tensors are laid out densely.)
        dy = torch.randn(x.shape, generator=torch.Generator().manual_seed(2))
        y.backward(dy)
        yn.backward(dy.to("neuron"))
        assert bits_equal(xn.grad.cpu(), xc.grad)


def test_hf_resnet_trains_to_the_cpus_parameters_and_statistics():
    torch.manual_seed(0)
    model, inputs = op_diff.models()["resnet"]()  # built from a config, no download
    before = copy.deepcopy(model)
    assert_trains_to_cpu_parameters(model, inputs)
    dev = before.to("neuron")
    cpu = copy.deepcopy(before).cpu()
    for m, device in ((cpu, "cpu"), (dev, "neuron")):
        m(**{k: v.to(device) for k, v in inputs.items()}).loss.backward()
    for (name, a), b in zip(cpu.named_buffers(), dev.buffers()):
        as_bits = (lambda t: t.view(torch.int32)) if a.is_floating_point() else (lambda t: t)
        assert torch.equal(as_bits(b.cpu()), as_bits(a)), name
