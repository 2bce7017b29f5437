"""float32 scaled_dot_product_attention on `neuron` gives the CPU's output bits: the executor's
attention calls take their output from ATen's own CPU flash attention, which torch's sdpa runs
on float32 CPU tensors for every case below (runtime/aten_attention.h). Causal or not, boolean
and float masks, grouped-query attention, lengths that take vtrn's through-memory call and its
flash call (multiples of 512); and HF Llama's logits. Gradients still come from vtrn's own
backward and agree within rounding (test_attention.py)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import bits_equal

import vtrn  # noqa: F401 - registers the device


def qkv(b, h, hk, lq, lk, d, seed):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(b, h, lq, d, generator=g),
        torch.randn(b, hk, lk, d, generator=g),
        torch.randn(b, hk, lk, d, generator=g),
    )


@pytest.mark.parametrize("lq,lk", [(1, 1), (7, 7), (128, 128), (33, 70), (512, 512)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_output_is_the_cpus(lq, lk, causal, threads):
    q, k, v = qkv(2, 4, 4, lq, lk, 32, lq + lk)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    got = F.scaled_dot_product_attention(
        q.to("neuron"), k.to("neuron"), v.to("neuron"), is_causal=causal
    )
    assert bits_equal(got.cpu(), want)


def test_masks_and_grouped_query_attention_are_the_cpus(threads):
    q, k, v = qkv(2, 8, 2, 64, 64, 16, 1)
    dev = [t.to("neuron") for t in (q, k, v)]
    assert bits_equal(
        F.scaled_dot_product_attention(*dev, is_causal=True, enable_gqa=True).cpu(),
        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
    )
    g = torch.Generator().manual_seed(2)
    bool_mask = torch.rand(2, 1, 64, 64, generator=g) > 0.3
    float_mask = torch.randn(64, 64, generator=g)
    for mask in (bool_mask, float_mask):
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        got = F.scaled_dot_product_attention(*dev, attn_mask=mask.to("neuron"), enable_gqa=True)
        assert bits_equal(got.cpu(), want), mask.dtype


def test_hf_llama_logits_are_the_cpus():
    transformers = pytest.importorskip("transformers")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        hidden_size=128,
        intermediate_size=344,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
        max_position_embeddings=128,
        attn_implementation="sdpa",
    )
    cpu = transformers.LlamaForCausalLM(cfg).eval()
    dev = copy.deepcopy(cpu).to("neuron")
    ids = torch.randint(0, 1000, (2, 64), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert bits_equal(dev(ids.to("neuron")).logits.cpu(), cpu(ids).logits)


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_flash_attention_gradients_are_the_cpus(kv_heads, threads):
    """Lengths that take the flash calls (multiples of 512, no mask): the backward is ATen's
    flash backward from the output and logsumexp its forward gave, so the gradients are the
    CPU's bits too, grouped-query attention included."""
    q, k, v = qkv(1, 4, kv_heads, 512, 512, 32, kv_heads)
    g = torch.randn(1, 4, 512, 32, generator=torch.Generator().manual_seed(9))
    grads = {}
    for device in ("cpu", "neuron"):
        leaves = [t.detach().to(device).requires_grad_() for t in (q, k, v)]
        out = F.scaled_dot_product_attention(*leaves, is_causal=True, enable_gqa=kv_heads != 4)
        out.backward(g.to(device))
        grads[device] = [t.grad.cpu() for t in leaves]
    for a, b in zip(grads["neuron"], grads["cpu"]):
        assert bits_equal(a, b)


@pytest.mark.parametrize("length", [128, 512])
def test_bfloat16_attention_is_the_cpus(length):
    """bfloat16 (autocast's attention dtype): the outputs, with a mask and grouped-query
    attention, and at flash lengths the gradients."""
    q, k, v = (t.bfloat16() for t in qkv(2, 4, 2, length, length, 32, length))
    mask = torch.rand(length, length, generator=torch.Generator().manual_seed(5)) > 0.2
    for kwargs in ({"is_causal": True}, {"attn_mask": mask}):
        want = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kwargs)
        dev_kwargs = {n: a.to("neuron") if torch.is_tensor(a) else a for n, a in kwargs.items()}
        got = F.scaled_dot_product_attention(
            q.to("neuron"), k.to("neuron"), v.to("neuron"), enable_gqa=True, **dev_kwargs
        )
        assert bits_equal(got.cpu(), want), kwargs.keys()
    if length % 512 == 0:
        g = torch.randn(2, 4, length, 32, generator=torch.Generator().manual_seed(6)).bfloat16()
        grads = {}
        for device in ("cpu", "neuron"):
            leaves = [t.detach().to(device).requires_grad_() for t in (q, k, v)]
            out = F.scaled_dot_product_attention(*leaves, is_causal=True, enable_gqa=True)
            out.backward(g.to(device))
            grads[device] = [t.grad.cpu() for t in leaves]
        for a, b in zip(grads["neuron"], grads["cpu"]):
            assert bits_equal(a, b)
