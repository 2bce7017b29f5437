"""scaled_dot_product_attention on neuron: the fused kernel (vtrn::sdpa_forward/backward, one
module each) for what it covers, PyTorch's math path for the rest; both against the CPU."""

import pytest
import torch
import torch.nn.functional as F

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


def test_a_mask_tensor_takes_the_math_path():
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 5, 4, generator=gen) for _ in range(3))
    mask = torch.rand(5, 5, generator=gen) > 0.3
    mask[:, 0] = True
    grad = torch.randn(1, 2, 5, 4, generator=gen)
    vtrn.clear_op_tracking()
    got = attention_and_grads("neuron", q, k, v, grad, attn_mask=mask.to("neuron"))
    assert "vtrn::sdpa_forward" not in vtrn.get_executed_ops()
    want = attention_and_grads("cpu", q, k, v, grad, attn_mask=mask)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
