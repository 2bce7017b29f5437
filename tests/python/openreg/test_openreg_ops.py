# Adapted for the `neuron` device from torch_openreg's tests/test_ops.py and tests/test_sdpa.py,
# in PyTorch's test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""Factories, copies, ops and the CPU fallback, out= semantics, SDPA's overrideable backend.

Left out: openreg's custom operators (torch.ops.openreg.*) and the custom autograd functions
built on them. Quantized tensors: neuron holds no quantized dtype (see test_device.py), so
quantize_per_tensor on a neuron tensor must fail cleanly instead of producing one."""

import collections
import functools
import warnings

import pytest
import torch
from torch.nn.attention import SDPBackend

import vtrn

SDPAShape = collections.namedtuple("SDPAShape", ["batch", "num_heads", "seq_len", "head_dim"])


class TestFactory:
    def test_empty(self):
        # (openreg also creates a named tensor: torch 2.13 has no `names` argument any more)
        x = torch.empty(3, device="neuron")
        assert x.device.type == "neuron" and x.shape == torch.Size([3])

        with torch._subclasses.fake_tensor.FakeTensorMode():
            x = torch.empty(3, 3, device="neuron")
            y = torch.empty(3, 3, device="neuron:0")
            z = x + y
            assert z.device.type == "neuron" and z.shape == torch.Size([3, 3])

    def test_zeros(self):
        y = torch.zeros(3, device="neuron")
        assert y.device.type == "neuron"
        assert y.cpu().tolist() == [0.0, 0.0, 0.0]

    def test_tensor(self):
        z = torch.tensor((), device="neuron")
        assert z.device.type == "neuron" and z.shape == torch.Size([0])


class TestCopy:
    def test_copy_same_device(self):
        a = torch.ones(10, device="neuron").clone()
        assert torch.equal(a.cpu(), torch.ones(10))

    def test_cross_device_copy(self):
        a = torch.rand(10)
        b = a.to(device="neuron").add(2).to(device="cpu")
        assert torch.equal(b, a + 2)

    def test_cross_diff_devices_copy(self):
        a = torch.ones(10, device="neuron:0").to(device="neuron:1").to(device="cpu")
        assert torch.equal(a, torch.ones(10))


class TestOps:
    def test_masked_select(self):
        tensor_cpu = torch.randn(10)
        tensor_neuron = tensor_cpu.to(device="neuron")
        out = torch.masked_select(tensor_neuron, tensor_neuron.gt(0))
        assert torch.equal(out.cpu(), tensor_cpu.masked_select(tensor_cpu.gt(0)))

    def test_expand(self):
        x = torch.tensor([[1], [2], [3]], device="neuron")
        y = x.expand(3, 2)
        assert torch.equal(y.to(device="cpu"), torch.tensor([[1, 1], [2, 2], [3, 3]]))
        assert x.data_ptr() == y.data_ptr()

    def test_resize(self):
        tensor_neuron = torch.randn([4, 4]).neuron()
        assert tensor_neuron.size() == torch.Size([4, 4])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TypedStorage is deprecated
            assert tensor_neuron.storage().size() == 16
            tensor_neuron.resize_(2, 2, 2, 2)
            assert tensor_neuron.size() == torch.Size([2, 2, 2, 2])
            assert tensor_neuron.storage().size() == 16

    def test_printing(self):
        a = torch.ones(20, device="neuron")
        assert repr(a) == repr(torch.ones(20))[:-1] + ", device='neuron:0')"


class TestSTUB:
    def test_backend_dispatchstub(self):
        x_cpu = torch.randn(2, 2, 3, dtype=torch.float32, device="cpu")
        x_neuron = x_cpu.to("neuron")
        assert torch.equal(torch.abs(x_cpu), torch.abs(x_neuron).cpu())

        o_cpu = torch.randn(2, 2, 6, dtype=torch.float32, device="cpu")
        o_neuron = o_cpu.to("neuron")
        # an out= operand that TensorIterator writes in place
        torch.abs(x_cpu, out=o_cpu[:, :, 0:6:2])
        torch.abs(x_neuron, out=o_neuron[:, :, 0:6:2])
        assert torch.equal(o_cpu, o_neuron.cpu())

        # an out= operand that must be resized, and is made contiguous
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "An output with one or more elements was resized"
            torch.abs(x_cpu, out=o_cpu[:, :, 0:6:3])
            torch.abs(x_neuron, out=o_neuron[:, :, 0:6:3])
        assert torch.equal(o_cpu, o_neuron.cpu())


class TestQuantization:
    def test_quantize_fails_cleanly(self):
        x = torch.randn(3, 4, 5, dtype=torch.float32, device="neuron")
        with pytest.raises(NotImplementedError, match="Quantizedneuron"):
            torch.quantize_per_tensor(x, 0.1, 10, torch.qint8)
        assert torch.equal((x + 0).cpu(), x.cpu())  # the device is still usable


class TestFallback:
    def test_scalar_type_fallback(self):
        x_cpu = torch.Tensor([[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]).to(torch.int64)
        x = torch.triu_indices(3, 3, device="neuron")
        assert x.device.type == "neuron"
        assert torch.equal(x_cpu, x.cpu())

    def test_tensor_type_fallback(self):
        x = torch.Tensor([[1, 2, 3], [2, 3, 4]]).to("neuron")
        y = torch.Tensor([1, 0, 2]).to("neuron")
        assert x.device.type == "neuron" and not x.is_cpu
        z = torch.sub(x, y)
        assert torch.equal(torch.Tensor([[0, 2, 1], [1, 3, 2]]), z.cpu())
        y = torch.Tensor([1, 0]).long().to("neuron")
        z = x[y, y]
        assert torch.equal(torch.Tensor([3, 1]), z.cpu())

    def test_tensorlist_type_fallback(self):
        v_neuron = torch.Tensor([1, 2, 3]).to("neuron")
        z = torch._foreach_add((v_neuron, v_neuron), (v_neuron, v_neuron))
        assert all(t.device.type == "neuron" for t in z)
        assert torch.equal(torch.Tensor([2, 4, 6]), z[0].cpu())
        assert torch.equal(torch.Tensor([2, 4, 6]), z[1].cpu())

    @pytest.mark.parametrize(
        "loss, kwargs",
        [
            (torch.nn.functional.mse_loss, {}),
            (torch.nn.functional.smooth_l1_loss, {}),
            (torch.nn.functional.smooth_l1_loss, {"beta": 0.25}),
        ],
    )
    @pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
    def test_losses_run_on_the_device_silently(self, clean_tracking, loss, kwargs, reduction):
        # Found by the profiler tests' training step: the functional form reached the device
        # through its out= form, whose CPU kernel warns that it resizes a 0-dim out; the CPU's
        # own functional form does not warn. The losses now have kernels of their own.
        a, b = torch.randn(32, 10), torch.randn(32, 10)
        a_neuron = a.to("neuron").requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", ".*fell back to CPU")
            got = loss(a_neuron, b.to("neuron"), reduction=reduction, **kwargs)
            got.sum().backward()
        a.requires_grad_()
        expected = loss(a, b, reduction=reduction, **kwargs)
        expected.sum().backward()
        torch.testing.assert_close(got.cpu(), expected)
        torch.testing.assert_close(a_neuron.grad.cpu(), a.grad)
        name = f"aten::{loss.__name__}"
        assert name in vtrn.get_executed_ops() and name not in vtrn.get_fallback_ops()

    def test_smooth_l1_loss_negative_beta_is_the_cpus_error(self):
        a = torch.ones(3)
        with pytest.raises(RuntimeError) as cpu:
            torch.nn.functional.smooth_l1_loss(a, a, beta=-1.0)
        with pytest.raises(RuntimeError, match="does not support negative values for beta"):
            torch.nn.functional.smooth_l1_loss(a.to("neuron"), a.to("neuron"), beta=-1.0)
        assert "does not support negative values for beta" in str(cpu.value)


def _sdpa_inputs(requires_grad=False):
    shape = SDPAShape(4, 2, 256, 128)
    make = functools.partial(torch.rand, device="cpu", dtype=torch.float16)
    return [make(shape).requires_grad_(requires_grad) for _ in range(3)]


class TestSDPA:
    def test_fused_sdp_choice_privateuseone(self):
        q, k, v = (t.to("neuron") for t in _sdpa_inputs())
        assert torch._fused_sdp_choice(q, k, v) == SDPBackend.OVERRIDEABLE.value

    def test_fused_sdp_choice_with_mask(self):
        # As openreg and TorchNeuron: the fused kernel takes a mask too (its values are
        # checked below and in test_fused_attention_takes_a_bias).
        q, k, v = (t.to("neuron") for t in _sdpa_inputs())
        mask = torch.rand(4, 2, 256, 256, dtype=torch.float16, device="neuron")
        assert torch._fused_sdp_choice(q, k, v, mask) == SDPBackend.OVERRIDEABLE.value

    def test_scaled_dot_product_attention_with_mask(self):
        q, k, v = _sdpa_inputs()
        mask = torch.rand(4, 2, 256, 256, dtype=torch.float16)
        out = torch.nn.functional.scaled_dot_product_attention(
            q.to("neuron"), k.to("neuron"), v.to("neuron"), attn_mask=mask.to("neuron")
        )
        expected = torch.nn.functional.scaled_dot_product_attention(
            q.float(), k.float(), v.float(), attn_mask=mask.float()
        )
        torch.testing.assert_close(out.cpu().float(), expected, atol=2e-3, rtol=2e-3)

    @pytest.mark.parametrize("is_causal", [False, True])
    def test_scaled_dot_product_fused_attention_overrideable(self, is_causal):
        q, k, v = _sdpa_inputs()
        out = torch.nn.functional.scaled_dot_product_attention(
            q.to("neuron"), k.to("neuron"), v.to("neuron"), dropout_p=0.0, is_causal=is_causal
        )
        assert out.device.type == "neuron"
        expected = torch.nn.functional.scaled_dot_product_attention(
            q.float(), k.float(), v.float(), is_causal=is_causal
        )
        torch.testing.assert_close(out.cpu().float(), expected, atol=2e-3, rtol=2e-3)

    def test_scaled_dot_product_attention_with_dropout(self):
        q, k, v = (t.to("neuron") for t in _sdpa_inputs())
        output = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
        assert output.device.type == "neuron"
        assert output.shape == q.shape

    def test_scaled_dot_product_fused_attention_overrideable_backward(self):
        # openreg passes an attn_bias; vtrn's fused kernel takes none and says so (below).
        q, k, v = (t.to("neuron") for t in _sdpa_inputs())
        output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, seed, offset, _ = (
            torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v)
        )
        grad_out = torch.rand(q.shape, dtype=torch.float16).to("neuron")
        grads = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward(
            grad_out,
            q,
            k,
            v,
            torch.empty(0, dtype=torch.float16, device="neuron"),
            [True, True, True, False],
            output,
            logsumexp,
            cum_seq_q,
            cum_seq_k,
            max_q,
            max_k,
            dropout_p=0.0,
            is_causal=False,
            philox_seed=seed,
            philox_offset=offset,
        )
        # against autograd through the math attention on the CPU
        qc, kc, vc = (t.cpu().float().requires_grad_(True) for t in (q, k, v))
        ref = torch.softmax(qc @ kc.transpose(-2, -1) / 128**0.5, dim=-1) @ vc
        torch.testing.assert_close(output.cpu().float(), ref.detach(), atol=2e-3, rtol=2e-3)
        ref.backward(grad_out.cpu().float())
        for got, want in zip(grads[:3], (qc.grad, kc.grad, vc.grad)):
            assert got.device.type == "neuron"
            torch.testing.assert_close(got.cpu().float(), want, atol=5e-3, rtol=5e-3)

    def test_fused_attention_takes_a_bias(self):
        q, k, v = _sdpa_inputs()
        bias = torch.rand(4, 2, 256, 256, dtype=torch.float16)
        out = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
            q.to("neuron"), k.to("neuron"), v.to("neuron"), attn_bias=bias.to("neuron")
        )[0]
        expected = torch.nn.functional.scaled_dot_product_attention(
            q.float(), k.float(), v.float(), attn_mask=bias.float()
        )
        torch.testing.assert_close(out.cpu().float(), expected, atol=2e-3, rtol=2e-3)


class TestFactoryExtended:
    def test_empty_with_memory_format(self):
        x = torch.empty(1, 2, 3, 4, device="neuron", memory_format=torch.channels_last)
        assert x.device.type == "neuron" and x.shape == torch.Size([1, 2, 3, 4])
        assert x.is_contiguous(memory_format=torch.channels_last)
        x = torch.empty(2, 3, 4, device="neuron", memory_format=torch.contiguous_format)
        assert x.is_contiguous()

    def test_empty_strided(self):
        x = torch.empty_strided((3, 4), (4, 1), device="neuron")
        assert x.device.type == "neuron"
        assert x.shape == torch.Size((3, 4)) and x.stride() == (4, 1)

    def test_ones(self):
        x = torch.ones(3, 4, device="neuron")
        assert torch.all(x == 1)

    def test_ones_like(self):
        x = torch.randn(3, 4, device="neuron")
        y = torch.ones_like(x)
        assert y.device.type == "neuron" and y.shape == x.shape and torch.all(y == 1)

    def test_randn(self):
        x = torch.randn(3, 4, device="neuron")
        assert x.device.type == "neuron" and x.shape == torch.Size([3, 4])

    def test_full(self):
        x = torch.full((3, 4), 5.0, device="neuron")
        assert torch.all(x == 5.0)


class TestCopyExtended:
    def test_copy_different_dtypes(self):
        x = torch.randn(3, 4, dtype=torch.float32, device="neuron")
        y = torch.empty(3, 4, dtype=torch.float64, device="neuron")
        y.copy_(x)
        assert y.dtype == torch.float64
        assert torch.equal(y.cpu(), x.cpu().double())

    def test_clone(self):
        x = torch.randn(3, 4, device="neuron")
        y = x.clone()
        assert torch.equal(y.cpu(), x.cpu())
        assert y.data_ptr() != x.data_ptr()

    def test_copy_non_blocking(self):
        x = torch.randn(3, 4, device="neuron")
        y = torch.empty(3, 4, device="neuron")
        y.copy_(x, non_blocking=True)
        assert torch.equal(y.cpu(), x.cpu())


class TestOpsExtended:
    def test_view(self):
        x = torch.randn(2, 3, 4, device="neuron")
        y = x.view(6, 4)
        assert y.shape == torch.Size([6, 4]) and x.data_ptr() == y.data_ptr()

    def test_reshape(self):
        x = torch.randn(2, 3, 4, device="neuron")
        y = x.reshape(6, 4)
        assert y.device.type == "neuron" and y.shape == torch.Size([6, 4])

    def test_as_strided(self):
        x = torch.arange(12.0).reshape(3, 4).to("neuron")
        y = torch.as_strided(x, (2, 2), (4, 1), 1)
        assert y.device.type == "neuron"
        assert y.cpu().tolist() == [[1.0, 2.0], [5.0, 6.0]]

    def test_local_scalar_dense(self):
        assert torch.tensor([5.0], device="neuron").item() == 5.0

    def test_set_tensor(self):
        x = torch.randn(3, 4, device="neuron")
        y = torch.empty(3, 4, device="neuron")
        y.set_(x)
        assert torch.equal(y.cpu(), x.cpu()) and y.data_ptr() == x.data_ptr()

    def test_set_storage(self):
        x = torch.randn(3, 4, device="neuron")
        y = torch.empty(3, 4, device="neuron")
        y.set_(x.untyped_storage(), 0, y.size())
        assert torch.equal(y.cpu(), x.cpu())


class TestSTUBExtended:
    def test_abs_contiguous(self):
        x = torch.randn(2, 3, device="neuron")
        y = torch.abs(x)
        assert torch.equal(y.cpu(), x.cpu().abs())

    def test_abs_non_contiguous(self):
        x = torch.randn(2, 3, device="neuron")
        y = torch.abs(x.t())
        assert torch.equal(y.cpu(), x.cpu().t().abs())

    def test_abs_out(self):
        x = torch.randn(2, 3, device="neuron")
        out = torch.empty_like(x)
        ret = torch.abs(x, out=out)
        assert ret is out
        assert torch.equal(out.cpu(), x.cpu().abs())


class TestFallbackExtended:
    def test_fallback_operations(self):
        x = torch.randn(3, 4, device="neuron")
        y = torch.randn(3, 4, device="neuron")
        assert torch.equal(torch.add(x, y).cpu(), x.cpu() + y.cpu())
        assert torch.equal(torch.mul(x, y).cpu(), x.cpu() * y.cpu())

    def test_fallback_with_scalars(self):
        x = torch.randn(3, 4, device="neuron")
        assert torch.equal((x + 1.0).cpu(), x.cpu() + 1.0)
        assert torch.equal((x * 2.0).cpu(), x.cpu() * 2.0)


class TestMaximumMinimum:
    """openreg registers these through its structured-kernel codegen; the values are generic."""

    def test_maximum(self):
        x = torch.tensor([1.0, 5.0, 3.0], device="neuron")
        y = torch.tensor([4.0, 2.0, 6.0], device="neuron")
        assert torch.maximum(x, y).cpu().tolist() == [4.0, 5.0, 6.0]
        out = torch.empty(3, device="neuron")
        ret = torch.maximum(x, y, out=out)
        assert ret.cpu().tolist() == out.cpu().tolist() == [4.0, 5.0, 6.0]

    def test_minimum(self):
        x = torch.tensor([1.0, 5.0, 3.0], device="neuron")
        y = torch.tensor([4.0, 2.0, 6.0], device="neuron")
        assert torch.minimum(x, y).cpu().tolist() == [1.0, 2.0, 3.0]
        out = torch.empty(3, device="neuron")
        ret = torch.minimum(x, y, out=out)
        assert ret.cpu().tolist() == out.cpu().tolist() == [1.0, 2.0, 3.0]
