"""float32 scaled_dot_product_attention on `neuron` gives the CPU's output bits: the executor's
attention calls take their output from ATen's own CPU flash attention, which torch's sdpa runs
on float32 CPU tensors for every case below (runtime/aten_attention.h). Causal or not, boolean
and float masks, grouped-query attention, lengths that take vtrn's through-memory call and its
flash call (multiples of 512); and HF Llama's logits. The backward calls take ATen's flash
backward from the logsumexp their forward saved, so the gradients are the CPU's bits too."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_trains_to_cpu_parameters, bits_equal

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


def llama(transformers):
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
    return transformers.LlamaForCausalLM(cfg)


def test_hf_llama_logits_are_the_cpus():
    transformers = pytest.importorskip("transformers")
    cpu = llama(transformers).eval()
    dev = copy.deepcopy(cpu).to("neuron")
    ids = torch.randint(0, 1000, (2, 64), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert bits_equal(dev(ids.to("neuron")).logits.cpu(), cpu(ids).logits)


def test_hf_llama_trains_to_the_cpus_parameters():
    """Three AdamW steps: the attention gradients (ATen's flash backward from the saved
    logsumexp), the loss and every other gradient are the CPU's bits."""
    transformers = pytest.importorskip("transformers")
    ids = torch.randint(0, 1000, (2, 64), generator=torch.Generator().manual_seed(1))
    assert_trains_to_cpu_parameters(llama(transformers), {"input_ids": ids, "labels": ids})


def gradients(q, k, v, g, device, **kwargs):
    leaves = [t.detach().to(device).requires_grad_() for t in (q, k, v)]
    kwargs = {n: a.to(device) if torch.is_tensor(a) else a for n, a in kwargs.items()}
    out = F.scaled_dot_product_attention(*leaves, enable_gqa=k.shape[1] != q.shape[1], **kwargs)
    out.backward(g.to(device))
    return [t.grad.cpu() for t in leaves]


def masks(lq, lk):
    gen = torch.Generator().manual_seed(lq + lk)
    bool_mask = torch.rand(2, 1, lq, lk, generator=gen) > 0.3
    bool_mask[0, 0, 0] = False  # a query that sees no key
    return {
        "causal": {"is_causal": True},
        "none": {},
        "bool": {"attn_mask": bool_mask},
        "float": {"attn_mask": torch.randn(lq, lk, generator=gen)},
    }


@pytest.mark.parametrize("lq,lk", [(1, 1), (7, 7), (33, 70), (128, 128), (512, 512)])
@pytest.mark.parametrize("kv_heads", [4, 2])
@pytest.mark.parametrize("mask", ["causal", "none", "bool", "float"])
def test_attention_gradients_are_the_cpus(lq, lk, kv_heads, mask, threads):
    """Through-memory lengths (the forward saves each row's logsumexp after its probabilities)
    and flash lengths (multiples of 512, no mask), masks, a query that sees no key, and
    grouped-query attention: query, key and value gradients are the CPU's bits."""
    q, k, v = qkv(2, 4, kv_heads, lq, lk, 32, lq + kv_heads)
    g = torch.randn(2, 4, lq, 32, generator=torch.Generator().manual_seed(9))
    kwargs = masks(lq, lk)[mask]
    for a, b in zip(
        gradients(q, k, v, g, "neuron", **kwargs), gradients(q, k, v, g, "cpu", **kwargs)
    ):
        assert bits_equal(a, b)


@pytest.mark.parametrize("length", [128, 512])
def test_bfloat16_attention_is_the_cpus(length):
    """bfloat16 (autocast's attention dtype): the outputs and the gradients, with a mask and
    grouped-query attention."""
    q, k, v = (t.bfloat16() for t in qkv(2, 4, 2, length, length, 32, length))
    mask = torch.rand(length, length, generator=torch.Generator().manual_seed(5)) > 0.2
    for kwargs in ({"is_causal": True}, {"attn_mask": mask}):
        want = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kwargs)
        dev_kwargs = {n: a.to("neuron") if torch.is_tensor(a) else a for n, a in kwargs.items()}
        got = F.scaled_dot_product_attention(
            q.to("neuron"), k.to("neuron"), v.to("neuron"), enable_gqa=True, **dev_kwargs
        )
        assert bits_equal(got.cpu(), want), kwargs.keys()
    g = torch.randn(2, 4, length, 32, generator=torch.Generator().manual_seed(6)).bfloat16()
    for kwargs in ({"is_causal": True}, {"attn_mask": mask}):
        neuron = gradients(q, k, v, g, "neuron", **kwargs)
        for a, b in zip(neuron, gradients(q, k, v, g, "cpu", **kwargs)):
            assert bits_equal(a, b), kwargs.keys()
