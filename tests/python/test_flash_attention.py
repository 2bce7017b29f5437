"""scaled_dot_product_attention on neuron where TorchNeuron runs its NKI flash attention
kernels (query and key lengths multiples of 512, head size at most 128, no mask, no dropout):
one fused kernel forward and one backward, against the CPU, and the kernels' modeled time
against a hand computation from the Trainium2 figures."""

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
@pytest.mark.parametrize(
    "shape",
    [
        ((1, 2, 512, 16), (1, 2, 512, 16), True),
        ((1, 4, 512, 8), (1, 2, 1024, 8), False),
        # One kv head's 4 x 2048 query rows against 2048 keys are more scores than the host
        # kernel holds at once (64 MiB): its rows are split, and dK and dV summed over the parts.
        ((1, 8, 2048, 64), (1, 2, 2048, 64), True),
    ],
    ids=["causal", "gqa-longer-keys", "gqa-causal-rows-split"],
)
def test_flash_attention_matches_cpu_forward_and_backward(dtype, shape):
    q_shape, kv_shape, causal = shape
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(*q_shape, generator=gen).to(dtype)
    k, v = (torch.randn(*kv_shape, generator=gen).to(dtype) for _ in range(2))
    grad = torch.randn(*q_shape, generator=gen).to(dtype)
    gqa = q_shape[1] != kv_shape[1]
    vtrn.clear_op_tracking()
    got = attention_and_grads("neuron", q, k, v, grad, is_causal=causal, enable_gqa=gqa)
    executed = vtrn.get_executed_ops()
    assert "vtrn::flash_attention_forward" in executed, executed
    assert "vtrn::flash_attention_backward" in executed, executed
    assert "vtrn::sdpa_forward" not in executed
    want = attention_and_grads("cpu", q, k, v, grad, is_causal=causal, enable_gqa=gqa)
    exact = None
    for i, (g, w, name) in enumerate(zip(got, want, ["out", "grad_q", "grad_k", "grad_v"])):
        try:
            torch.testing.assert_close(g, w, **TOLERANCE[dtype], msg=lambda m: f"{name}: {m}")
        except AssertionError:
            if dtype != torch.bfloat16:
                raise
            # Over thousands of rows the CPU's own bfloat16 rounding can be off by more than
            # the tolerance: then neuron must be at least as near the float64 result as it is.
            if exact is None:
                exact = attention_and_grads(
                    "cpu", *(t.double() for t in (q, k, v, grad)), is_causal=causal, enable_gqa=gqa
                )
            neuron_err = (g.double() - exact[i]).abs().max().item()
            cpu_err = (w.double() - exact[i]).abs().max().item()
            assert neuron_err <= cpu_err, f"{name}: neuron {neuron_err} from float64, cpu {cpu_err}"


def test_other_lengths_and_masks_keep_the_module_through_memory():
    q, k, v = (torch.randn(1, 2, 256, 16).to("neuron") for _ in range(3))
    vtrn.clear_op_tracking()
    F.scaled_dot_product_attention(q, k, v, is_causal=True)
    q, k, v = (torch.randn(1, 2, 512, 16).to("neuron") for _ in range(3))
    mask = torch.ones(512, 512, dtype=torch.bool).to("neuron")
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    executed = vtrn.get_executed_ops()
    assert "vtrn::flash_attention_forward" not in executed, executed
    assert "vtrn::sdpa_forward" in executed


def test_modeled_time_is_the_fused_kernels_from_the_trainium2_figures():
    # One head of 512 x 512, head size 128, bf16, causal, on one NeuronCore-v3 (Tensor 79 BF16
    # TFLOPS, Vector 1 TFLOPS, HBM 2.9 TB/s / 8 cores = 362.5 GB/s, 1,300 ns per DMA start).
    # Forward: 2 contractions of 2 * 512 * 256 * 128 FLOPs (the causal half) = 8.49e-7 s of
    # Tensor engine; 4 Vector passes over 512 * 256 scores = 5.24e-7 s; HBM: Q, K, V, O of
    # 512 * 128 bf16 and a float32 logsumexp per row = 1.45e-6 s, so DMA bounds it.
    # Backward: 5 contractions = 2.12e-6 s; HBM: Q, K, V, O, dO, dQ, dK, dV and the logsumexp
    # = 2.90e-6 s, DMA again. The 512 x 512 scores (0.5 MB in bf16) never count.
    q, k, v = (torch.randn(1, 1, 512, 128, dtype=torch.bfloat16).to("neuron") for _ in range(3))
    q.requires_grad_()
    vtrn.clock(reset=True)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    forward = vtrn.clock(reset=True)["streams"][0]["busy_us"]
    grad = torch.ones_like(out)
    vtrn.clock(reset=True)
    torch.autograd.grad(out, q, grad)
    backward = vtrn.clock(reset=True)["streams"][0]["busy_us"]
    elements = 512 * 128
    want_forward = 1.3e-6 + (4 * elements * 2 + 512 * 4) / 362.5e9
    want_backward = 1.3e-6 + (8 * elements * 2 + 512 * 4) / 362.5e9
    assert forward["dma"] * 1e-6 == pytest.approx(want_forward, rel=1e-6), forward
    assert forward["tensor"] == forward["vector"] == forward["scalar"] == 0, forward
    assert backward["dma"] * 1e-6 == pytest.approx(want_backward, rel=1e-6), backward
    assert backward["tensor"] == backward["vector"] == backward["scalar"] == 0, backward
