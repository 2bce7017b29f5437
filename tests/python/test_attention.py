"""scaled_dot_product_attention on neuron: the fused kernel (vtrn::sdpa_forward/backward, one
module each) for what it covers, PyTorch's math path for the rest; both against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import vtrn

TOLERANCE = {torch.float32: {}, torch.bfloat16: {"rtol": 1.6e-2, "atol": 1.6e-2}}


def attention_and_grads(device, q, k, v, grad, **kwargs):
    qq, kk, vv = (t.to(device).requires_grad_() for t in (q, k, v))
    out = F.scaled_dot_product_attention(qq, kk, vv, **kwargs)
    grads = torch.autograd.grad(out, (qq, kk, vv), grad.to(device))
    return [out.detach().cpu()] + [g.cpu() for g in grads]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_fused_attention_matches_cpu_forward_and_backward(dtype, causal):
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 17, 8, generator=gen).to(dtype) for _ in range(3))
    grad = torch.randn(2, 3, 17, 8, generator=gen).to(dtype)
    vtrn.clear_op_tracking()
    got = attention_and_grads("neuron", q, k, v, grad, is_causal=causal)
    executed = vtrn.get_executed_ops()
    assert "vtrn::sdpa_forward" in executed and "vtrn::sdpa_backward" in executed, executed
    assert "aten::bmm" not in executed  # not the math path
    assert vtrn.get_fallback_ops() == []
    want = attention_and_grads("cpu", q, k, v, grad, is_causal=causal)
    for g, w, name in zip(got, want, ["out", "grad_q", "grad_k", "grad_v"]):
        torch.testing.assert_close(g, w, **TOLERANCE[dtype], msg=lambda m: f"{name}: {m}")


def math_attention(q, k, v, mask=None, dropout_p=0.0, gqa=False, causal=False):
    """PyTorch's math path (SDPBackend.MATH) on q's device."""
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=dropout_p, enable_gqa=gqa, is_causal=causal
        )


MASKS = {
    "bool_full": lambda g: torch.rand(2, 3, 7, 9, generator=g) > 0.3,
    "bool_padding": lambda g: torch.tensor([[1] * 9, [0, 0] + [1] * 7]).bool().view(2, 1, 1, 9),
    "bool_2d": lambda g: torch.rand(7, 9, generator=g) > 0.5,
    "float_bias": lambda g: torch.randn(1, 3, 7, 9, generator=g),
    "all_masked_row": lambda g: torch.ones(7, 9).bool().index_fill_(0, torch.tensor([2]), False),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("mask_kind", list(MASKS))
def test_fused_attention_with_a_mask_matches_cpu(dtype, mask_kind):
    gen = torch.Generator().manual_seed(1)
    q = torch.randn(2, 3, 7, 4, generator=gen).to(dtype)
    k, v = (torch.randn(2, 3, 9, 4, generator=gen).to(dtype) for _ in range(2))
    grad = torch.randn(2, 3, 7, 4, generator=gen).to(dtype)
    mask = MASKS[mask_kind](gen)
    if mask.dtype != torch.bool:
        mask = mask.to(dtype)
    vtrn.clear_op_tracking()
    got = attention_and_grads("neuron", q, k, v, grad, attn_mask=mask.to("neuron"))
    executed = vtrn.get_executed_ops()
    assert "vtrn::sdpa_forward" in executed and "vtrn::sdpa_backward" in executed, executed
    assert vtrn.get_fallback_ops() == []
    want = attention_and_grads("cpu", q, k, v, grad, attn_mask=mask)
    for g, w, name in zip(got, want, ["out", "grad_q", "grad_k", "grad_v"]):
        torch.testing.assert_close(g, w, **TOLERANCE[dtype], msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_grouped_query_attention_matches_cpu(dtype, causal):
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(2, 6, 5, 8, generator=gen).to(dtype)
    k, v = (torch.randn(2, 2, 5, 8, generator=gen).to(dtype) for _ in range(2))
    grad = torch.randn(2, 6, 5, 8, generator=gen).to(dtype)
    vtrn.clear_op_tracking()
    got = attention_and_grads("neuron", q, k, v, grad, is_causal=causal, enable_gqa=True)
    assert "vtrn::sdpa_forward" in vtrn.get_executed_ops()
    assert vtrn.get_fallback_ops() == []
    want = attention_and_grads("cpu", q, k, v, grad, is_causal=causal, enable_gqa=True)
    for g, w, name in zip(got, want, ["out", "grad_q", "grad_k", "grad_v"]):
        torch.testing.assert_close(g, w, **TOLERANCE[dtype], msg=lambda m: f"{name}: {m}")


def test_gqa_without_enable_gqa_raises_the_cpus_error():
    q, k = torch.randn(1, 4, 3, 2), torch.randn(1, 2, 3, 2)
    with pytest.raises(RuntimeError) as cpu:
        F.scaled_dot_product_attention(q, k, k)
    with pytest.raises(RuntimeError) as dev:
        F.scaled_dot_product_attention(q.to("neuron"), k.to("neuron"), k.to("neuron"))
    assert str(dev.value) == str(cpu.value)


def test_mask_with_is_causal_masks_both_as_the_cpu_does():
    gen = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 2, 5, 4, generator=gen) for _ in range(3))
    grad = torch.randn(1, 2, 5, 4, generator=gen)
    mask = torch.rand(5, 5, generator=gen) > 0.3
    vtrn.clear_op_tracking()
    got = attention_and_grads("neuron", q, k, v, grad, attn_mask=mask.to("neuron"), is_causal=True)
    assert "vtrn::sdpa_forward" in vtrn.get_executed_ops()
    want = attention_and_grads("cpu", q, k, v, grad, attn_mask=mask, is_causal=True)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    # The same as one mask that is both (PyTorch's math path refuses the pair).
    both = mask & torch.ones(5, 5, dtype=torch.bool).tril()
    torch.testing.assert_close(got[0], math_attention(q, k, v, mask=both))


def test_dropout_draws_the_device_generators_mask_and_runs_natively():
    """With dropout_p > 0 attention takes PyTorch's math path: its dropout mask is what the
    device generator gives an eager dropout under the same seed."""
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 2, 6, 4, generator=gen).to("neuron") for _ in range(3))
    mask = (torch.rand(6, 6, generator=gen) > 0.2).to("neuron")
    vtrn.clear_op_tracking()
    torch.manual_seed(7)
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.4)
    assert vtrn.get_fallback_ops() == []
    # The same math by hand, its dropout drawn under the same seed.
    torch.manual_seed(7)
    scores = (q @ k.transpose(-2, -1)) / 2.0
    scores = scores.masked_fill(~mask, float("-inf"))
    p = F.dropout(torch.softmax(scores, -1), 0.4)
    torch.testing.assert_close(got.cpu(), (p @ v).cpu())
    torch.manual_seed(8)
    other = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.4)
    assert not torch.equal(other.cpu(), got.cpu())
    # dropout_p=0 equals the CPU's math path with the same mask.
    torch.testing.assert_close(
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0).cpu(),
        math_attention(q.cpu(), k.cpu(), v.cpu(), mask=mask.cpu()),
    )
