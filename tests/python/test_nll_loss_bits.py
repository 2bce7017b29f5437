"""nll_loss and cross_entropy with a mean or sum reduction on `neuron` give the CPU's loss and
total weight bit for bit: the call sums the samples in ATen's cascade of partial sums, in the
input's own type (compiler/aten_nll_loss.h). Float32 and bfloat16; ignored samples (all of
them: a NaN mean),
class weights, batches from 1 to past 2^12, a [C] input; and ATen's error for a target out of
range."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import bits_equal

import vtrn  # noqa: F401 - registers the device


def logits(n, c, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, generator=g) * 4
    t = torch.randint(0, c, (n,), generator=g)
    return x.to(dtype), t


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n", [1, 17, 300, 4099])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_is_the_cpus(dtype, n, reduction):
    x, t = logits(n, 50, dtype, n)
    t[::7] = -100  # ignored samples
    want = F.cross_entropy(x, t, reduction=reduction)
    got = F.cross_entropy(x.to("neuron"), t.to("neuron"), reduction=reduction)
    assert bits_equal(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_weighted_nll_loss_and_total_weight_are_the_cpus(dtype):
    x, t = logits(500, 30, dtype, 3)
    x = x.log_softmax(1)
    w = torch.rand(30, generator=torch.Generator().manual_seed(4)).to(dtype)
    t[5] = 11  # a custom ignore_index
    for reduction in (1, 2):
        want = torch.ops.aten.nll_loss_forward(x, t, w, reduction, 11)
        got = torch.ops.aten.nll_loss_forward(
            x.to("neuron"), t.to("neuron"), w.to("neuron"), reduction, 11
        )
        for a, b in zip(got, want):
            assert bits_equal(a.cpu(), b), reduction


def test_a_single_sample_of_rank_one():
    x, t = logits(1, 9, torch.float32, 5)
    want = F.nll_loss(x[0], t[0])
    assert bits_equal(F.nll_loss(x[0].to("neuron"), t[0].to("neuron")).cpu(), want)


def test_a_target_out_of_range_raises_atens_error():
    x, t = logits(4, 5, torch.float32, 6)
    t[1] = 7
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.nll_loss(x, t)
    with pytest.raises(RuntimeError, match="Target 7 is out of bounds."):
        F.nll_loss(x.to("neuron"), t.to("neuron")).cpu()
