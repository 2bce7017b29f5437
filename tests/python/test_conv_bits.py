"""float32 2-D convolutions on `neuron` give the CPU's bits: convolution lowers to
`custom_call @vtrn.aten_conv2d`, which runs ATen's own CPU convolution (oneDNN's blocked
kernels or its im2col and gemm, whichever the CPU would pick at the thread budget) with the bias
inside it (compiler/aten_conv2d.h). Strides, padding, dilation, groups, 1x1 windows (where the
CPU adds the bias inside the product), with and without bias, 1 and 2 threads; and HF ViT's
hidden states. The gradients come from ATen's convolution_backward
(`custom_call @vtrn.aten_conv2d_backward`), so HF ViT trains to the CPU's parameters."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_trains_to_cpu_parameters, bits_equal

import vtrn  # noqa: F401 - registers the device

CASES = [
    # (N, C, H, W, O, KH, KW, stride, padding, dilation, groups)
    (2, 3, 32, 32, 64, 8, 8, 8, 0, 1, 1),  # a ViT patch embedding
    (4, 16, 20, 20, 32, 3, 3, 1, 1, 1, 1),
    (8, 8, 16, 16, 16, 1, 1, 1, 0, 1, 1),  # 1x1: the CPU adds the bias inside the product
    (1, 3, 64, 48, 24, 7, 5, 2, 3, 1, 1),
    (2, 12, 15, 15, 12, 3, 3, 1, 2, 2, 12),  # depthwise, dilated
    (3, 8, 9, 9, 6, 3, 3, 2, 1, 1, 2),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d_is_the_cpus(case, with_bias, threads):
    n, c, h, w, o, kh, kw, stride, padding, dilation, groups = case
    g = torch.Generator().manual_seed(h + o)
    x = torch.randn(n, c, h, w, generator=g)
    weight = torch.randn(o, c // groups, kh, kw, generator=g)
    bias = torch.randn(o, generator=g) if with_bias else None
    kwargs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    want = F.conv2d(x, weight, bias, **kwargs)
    got = F.conv2d(
        x.to("neuron"),
        weight.to("neuron"),
        None if bias is None else bias.to("neuron"),
        **kwargs,
    )
    assert bits_equal(got.cpu(), want)


@pytest.mark.parametrize("case", CASES)
def test_conv2d_gradients_are_the_cpus(case, threads):
    n, c, h, w, o, kh, kw, stride, padding, dilation, groups = case
    g = torch.Generator().manual_seed(h + o + 1)
    tensors = (
        torch.randn(n, c, h, w, generator=g),
        torch.randn(o, c // groups, kh, kw, generator=g),
        torch.randn(o, generator=g),
    )
    kwargs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    grads = []
    for device in ("cpu", "neuron"):
        leaves = [t.detach().to(device).requires_grad_() for t in tensors]
        y = F.conv2d(*leaves, **kwargs)
        y.backward(torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(device))
        grads.append([t.grad.cpu() for t in leaves])
    for got, want in zip(grads[1], grads[0]):
        assert bits_equal(got, want)


def test_a_window_larger_than_the_input_raises_the_cpus_error():
    x, w = torch.randn(1, 2, 3, 3), torch.randn(4, 2, 5, 5)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(x, w)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(x.to("neuron"), w.to("neuron")).cpu()


def vit_config(transformers, **extra):
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    return transformers.ViTConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        image_size=32,
        patch_size=8,
        attn_implementation="sdpa",
        **extra,
    )


def test_hf_vit_hidden_states_are_the_cpus():
    transformers = pytest.importorskip("transformers")
    cpu = transformers.ViTModel(vit_config(transformers)).eval()
    dev = copy.deepcopy(cpu).to("neuron")
    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = cpu(pixels).last_hidden_state
        got = dev(pixels.to("neuron")).last_hidden_state
    assert bits_equal(got.cpu(), want)


def test_hf_vit_trains_to_the_cpus_parameters():
    transformers = pytest.importorskip("transformers")
    cfg = vit_config(
        transformers, num_labels=10, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
    )
    pixels = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    assert_trains_to_cpu_parameters(
        transformers.ViTForImageClassification(cfg),
        {"pixel_values": pixels, "labels": torch.tensor([1, 7, 3, 3])},
    )
