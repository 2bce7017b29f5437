"""float32 layer norm on `neuron` gives the CPU's bits: native_layer_norm lowers to
`custom_call @vtrn.aten_layer_norm`, which computes each row's mean and variance by ATen's
vectorized Welford cascade (RowwiseMoments) and the output as its kernel rounds it
(compiler/aten_layer_norm.h). The output, the saved mean and rstd, and models built on it
(HF GPT-2's blocks) match; row lengths cover the scalar tail, one chunk, chunk stacks of several
levels and long rows; 1 and 2 threads."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import bits_equal

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
