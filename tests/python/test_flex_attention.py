"""FlexAttention on neuron as a CUDA script writes it: `torch.compile(flex_attention)` with the
default backend, forward and backward, against the CPU's scaled_dot_product_attention with the
same causal mask (the CPU has no FlexAttention backward to compare with)."""

import torch
import torch.nn.functional as F
from conftest import run_python


def test_compiled_flex_attention_with_the_default_backend_matches_causal_sdpa_on_cpu():
    proc = run_python(
        """
        import torch, torch.nn.functional as F
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        import vtrn.compile

        def causal(b, h, q, kv):
            return q >= kv

        torch.manual_seed(0)
        q, k, v = (torch.randn(2, 4, 128, 16) for _ in range(3))
        grad = torch.randn(2, 4, 128, 16)
        ref = [t.clone().requires_grad_() for t in (q, k, v)]
        expected = F.scaled_dot_product_attention(*ref, is_causal=True)
        expected.backward(grad)

        dev = [t.to("neuron").requires_grad_() for t in (q, k, v)]
        mask = torch.compile(create_block_mask)(causal, 2, 1, 128, 128, device="neuron")
        out = torch.compile(flex_attention)(*dev, block_mask=mask)
        out.backward(grad.to("neuron"))
        assert out.device.type == "neuron", out.device
        torch.testing.assert_close(out.cpu(), expected, atol=1e-5, rtol=1e-5)
        for d, r in zip(dev, ref):
            torch.testing.assert_close(d.grad.cpu(), r.grad, atol=1e-5, rtol=1e-5)
        # The neuron backend compiled the graphs, not Inductor.
        assert vtrn.compile.get_dynamo_metrics()["graphs"] >= 2, vtrn.compile.get_dynamo_metrics()
        print("ok")
        """,
        timeout=300,
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-4000:]


def test_eager_flex_attention_accepts_neuron_and_keeps_the_cpu_backward_check():
    from torch.nn.attention.flex_attention import flex_attention

    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    out = flex_attention(*(t.to("neuron") for t in (q, k, v)))
    torch.testing.assert_close(out.cpu(), F.scaled_dot_product_attention(q, k, v))
    # Other devices keep PyTorch's own checks.
    try:
        flex_attention(q.requires_grad_(), k, v)
    except NotImplementedError as e:
        assert "backward on CPU" in str(e)
    else:
        raise AssertionError("FlexAttention accepted a CPU input that requires grad")


def test_set_device_initializes_the_device_as_cuda_does():
    proc = run_python(
        """
        import torch
        assert not torch.neuron.is_initialized()
        torch.neuron.set_device(1)
        assert torch.neuron.is_initialized()
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            t = torch.empty(2, device="neuron")
        assert t.device == torch.device("neuron:1"), t.device
        print("ok")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-4000:]
