"""float32 layer norm on `neuron` gives the CPU's bits: native_layer_norm lowers to
`custom_call @vtrn.aten_layer_norm`, which computes each row's mean and variance by ATen's
vectorized Welford cascade (RowwiseMoments) and the output as its kernel rounds it
(compiler/aten_layer_norm.h). The output, the saved mean and rstd, and models built on it
(HF GPT-2's blocks) match; row lengths cover the scalar tail, one chunk, chunk stacks of several
levels and long rows; 1 and 2 threads. The gradients come from ATen's own backward kernel
(compiler/aten_layer_norm_backward.h), split over the threads torch.set_num_threads gives, as
the CPU splits its weight and bias sums; HF GPT-2 then trains to the CPU's parameters."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_trains_to_cpu_parameters, bits_equal

import vtrn  # noqa: F401 - registers the device

LENGTHS = [1, 3, 7, 8, 9, 15, 16, 31, 100, 127, 128, 129, 256, 384, 768, 1000, 1024, 3000, 4096]
LENGTHS += [16385, 70000]


@pytest.mark.parametrize("n", LENGTHS)
def test_layer_norm_rows_are_the_cpus(n, threads):
    g = torch.Generator().manual_seed(n)
    rows = 3 if n > 10000 else 37
    x = torch.randn(rows, n, generator=g) * 3 + 2
    w = torch.randn(n, generator=g)
    b = torch.randn(n, generator=g)
    xn = x.to("neuron")
    for weight, bias in ((w, b), (w, None), (None, b), (None, None)):
        want = torch.native_layer_norm(x, (n,), weight, bias, 1e-5)
        got = torch.native_layer_norm(
            xn,
            (n,),
            None if weight is None else weight.to("neuron"),
            None if bias is None else bias.to("neuron"),
            1e-5,
        )
        for a, c in zip(got, want):
            assert bits_equal(a.cpu(), c), (weight is None, bias is None)


def test_layer_norm_over_several_dims_and_eps(threads):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, 8, 16, generator=g)
    ln = torch.nn.LayerNorm((8, 16), eps=1e-12)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(8, 16, generator=g))
        ln.bias.copy_(torch.randn(8, 16, generator=g))
    lnn = torch.nn.LayerNorm((8, 16), eps=1e-12).to("neuron")
    lnn.load_state_dict(ln.state_dict())
    with torch.no_grad():
        assert bits_equal(lnn(x.to("neuron")).cpu(), ln(x))
        assert bits_equal(F.layer_norm(x.to("neuron"), (16,)).cpu(), F.layer_norm(x, (16,)))


def test_gpt2_blocks_with_eager_attention_are_the_cpus():
    """HF GPT-2 (eager attention) built from a config: every hidden state is the CPU's bits;
    layer norm was the op whose rows differed."""
    import copy
    import warnings

    transformers = pytest.importorskip("transformers")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_embd=128,
        n_layer=2,
        n_head=4,
        vocab_size=1000,
        n_positions=64,
        attn_implementation="eager",
    )
    cpu = transformers.GPT2Model(cfg).eval()
    dev = copy.deepcopy(cpu).to("neuron")
    ids = torch.randint(0, 1000, (2, 64), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = cpu(ids, output_hidden_states=True).hidden_states
        got = dev(ids.to("neuron"), output_hidden_states=True).hidden_states
    for i, (a, b) in enumerate(zip(got, want)):
        assert bits_equal(a.cpu(), b), i


@pytest.mark.parametrize("n", [1, 7, 128, 768, 3000])
@pytest.mark.parametrize("rows", [1, 5, 64, 1000])
def test_layer_norm_gradients_are_the_cpus(n, rows, threads):
    g = torch.Generator().manual_seed(n + rows)
    x = torch.randn(rows, n, generator=g) * 3 + 2
    w = torch.randn(n, generator=g)
    b = torch.randn(n, generator=g)
    dy = torch.randn(rows, n, generator=g)
    for with_weight, with_bias in ((True, True), (True, False), (False, True), (False, False)):
        grads = []
        for device in ("cpu", "neuron"):
            leaves = [t.detach().to(device).requires_grad_() for t in (x, w, b)]
            y = F.layer_norm(
                leaves[0],
                (n,),
                leaves[1] if with_weight else None,
                leaves[2] if with_bias else None,
            )
            y.backward(dy.to(device))
            grads.append([None if t.grad is None else t.grad.cpu() for t in leaves])
        for got, want in zip(grads[1], grads[0]):
            assert (got is None) == (want is None)
            assert got is None or bits_equal(got, want), (with_weight, with_bias)


def test_hf_gpt2_trains_to_the_cpus_parameters():
    """Three AdamW steps of HF GPT-2 (dropout off): every parameter the CPU's bits, the
    attention, GELU, layer norm and loss gradients all ATen's."""
    transformers = pytest.importorskip("transformers")
    import warnings

    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_embd=64,
        n_layer=2,
        n_head=4,
        vocab_size=500,
        n_positions=64,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        attn_implementation="sdpa",
    )
    ids = torch.randint(0, 500, (2, 48), generator=torch.Generator().manual_seed(1))
    assert_trains_to_cpu_parameters(
        transformers.GPT2LMHeadModel(cfg), {"input_ids": ids, "labels": ids}
    )
