"""NKI kernels from PyTorch: @nki.jit kernels called on `neuron` tensors, wrap_nki's
higher-order operator (dense, fake, proxy, functionalization), and nki_op with
register_autograd training a small model against the same model in plain PyTorch."""

import numpy as np
import pytest
import torch
from rmsnorm_op import EPS, rmsnorm, train_beside_pytorch
from sample_loader import load_sample
from torch.fx.experimental.proxy_tensor import make_fx

import neuronxcc.nki as lnki
import neuronxcc.nki.language as nl
import nki
from torch_neuronx import wrap_nki

DEV = "neuron"

# -- the samples on neuron tensors -------------------------------------------------------------


def test_tensor_add_on_neuron_tensors():
    sample = load_sample("tensor_addition_legacy")
    a = torch.rand((256, 1024), dtype=torch.float16, device=DEV)
    b = torch.rand((256, 1024), dtype=torch.float16, device=DEV)
    out = sample.nki_tensor_add(a, b)
    assert out.device.type == "neuron" and out.dtype == torch.float16
    torch.testing.assert_close(out.cpu(), (a.cpu() + b.cpu()), atol=1e-4, rtol=1e-2)


def test_matmul_on_neuron_tensors():
    mm = load_sample("matrix_multiplication")
    lhs = torch.rand((512, 256), dtype=torch.bfloat16, device=DEV)
    rhs = torch.rand((256, 1024), dtype=torch.bfloat16, device=DEV)
    out = mm.nki_matmul_tiled_(lhs.T, rhs)
    assert out.device.type == "neuron"
    assert torch.allclose(torch.matmul(lhs.cpu(), rhs.cpu()), out.cpu(), atol=1e-4, rtol=1e-2)


def test_rmsnorm_on_neuron_tensors():
    sample = load_sample("rmsnorm")
    a = torch.rand((200, 512), device=DEV)
    g = torch.rand(512, device=DEV)
    out = sample.nki_rmsnorm_kernel(a, g).cpu()
    a, g = a.cpu().numpy(), g.cpu().numpy()
    ref = a * (1.0 / np.sqrt(np.mean(a * a, axis=1).reshape(a.shape[0], 1))) * g
    assert np.allclose(ref, out.numpy(), atol=1e-4, rtol=1e-2)


@pytest.mark.parametrize(
    "version,seqlen", [("attn_fwd_v1", 128), ("attn_fwd_v2", 128), ("attn_fwd_v3", 512)]
)
def test_attention_on_neuron_tensors(version, seqlen):
    sample = load_sample("attention_kernels")
    q, k, v = ((torch.rand((128, seqlen), device=DEV) - 0.5) * 2 for _ in range(3))
    out = getattr(sample, version)(q, k, v).cpu()
    ref = torch.softmax(q.cpu().T @ k.cpu(), dim=1) @ v.cpu().T
    assert torch.allclose(out, ref, atol=1e-2)


def test_flash_attention_on_neuron_tensors():
    sample = load_sample("flash_attention")
    ref = load_sample("flash_attention_reference")
    torch.manual_seed(0)
    q = (torch.rand((1, 2, 128, 2048)) - 0.5) * 2
    k = (torch.rand((1, 2, 128, 2048)) - 0.5) * 2
    v = (torch.rand((1, 2, 2048, 128)) - 0.5) * 2
    config = sample.FlashConfig(seq_tile_size=2048, training=False)
    o = sample.flash_fwd[1, 2](
        q.to(DEV), k.to(DEV), v.to(DEV), None, use_causal_mask=True, config=config
    )
    assert o.device.type == "neuron"
    golden, _, _ = ref.cpu_attention_forward(
        q.numpy(), k.numpy(), v.numpy().transpose(0, 1, 3, 2), use_causal_mask=True
    )
    assert np.allclose(o.cpu().numpy(), golden.transpose(0, 1, 3, 2), atol=1e-2)


def test_simulate_returns_tensors_on_the_callers_device():
    @nki.jit
    def double(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(a), 2.0))
        return out

    a = torch.rand((8, 16))
    out = nki.simulate(double)(a)
    assert isinstance(out, torch.Tensor) and out.device.type == "cpu"
    torch.testing.assert_close(out, 2 * a)
    out = nki.simulate(double)(a.to(DEV))
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), 2 * a)


# -- wrap_nki -------------------------------------------------------------------------------------


@lnki.jit
def add_into(x, y, out):
    """Writes x + y into |out| (an input the kernel mutates) and returns x * y."""
    prod = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tx, ty = nl.load(x), nl.load(y)
    nl.store(out, nl.add(tx, ty))
    nl.store(prod, nl.multiply(tx, ty))
    return prod


def test_wrap_nki_eager_returns_results_and_updates_mutated_inputs():
    x, y = torch.rand((16, 32), device=DEV), torch.rand((16, 32), device=DEV)
    out = torch.zeros((16, 32), device=DEV)
    prod = wrap_nki(add_into)(x, y, out)
    torch.testing.assert_close(prod.cpu(), x.cpu() * y.cpu())
    torch.testing.assert_close(out.cpu(), x.cpu() + y.cpu())


def test_wrap_nki_traces_to_one_node_with_fake_shapes():
    def f(x, y):
        out = torch.empty_like(x)
        prod = wrap_nki(add_into)(x, y, out)
        return prod + out

    x, y = torch.rand((16, 32)), torch.rand((16, 32))
    gm = make_fx(f, tracing_mode="fake")(x, y)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    from nki._torch_hop import nki_kernel_wrapper

    assert targets.count(nki_kernel_wrapper) == 1
    torch.testing.assert_close(gm(x, y), x * y + (x + y))
    # Functionalized: the kernel's write to `out` becomes a copy of a returned value.
    gm = make_fx(torch.func.functionalize(f), tracing_mode="fake")(x, y)
    torch.testing.assert_close(gm(x, y), x * y + (x + y))


def test_wrap_nki_with_a_grid_and_constants():
    sample = load_sample("tensor_addition_legacy")
    a, b = torch.rand((256, 1024)), torch.rand((256, 1024))
    out = wrap_nki(sample.nki_tensor_add_kernel_)[2, 2](a, b)
    torch.testing.assert_close(out, a + b)


# -- nki_op + register_autograd: RMSNorm trained in eager mode ---------------------------------


def test_nki_op_matches_pytorch_rmsnorm_forward_and_backward():
    x = torch.randn((200, 256), device=DEV, requires_grad=True)
    g = torch.rand(256, device=DEV, requires_grad=True)
    y = rmsnorm(x, g)
    (y * torch.arange(256, device=DEV)).sum().backward()
    xr, gr = x.detach().cpu().requires_grad_(), g.detach().cpu().requires_grad_()
    yr = torch.nn.functional.rms_norm(xr, (256,), gr, eps=EPS)
    (yr * torch.arange(256)).sum().backward()
    torch.testing.assert_close(y.detach().cpu(), yr.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad.cpu(), xr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(g.grad.cpu(), gr.grad, rtol=1e-4, atol=1e-3)
    run = nki.last_run()
    assert (
        run.kernel == "rmsnorm_bwd_kernel" and run.engine_instructions["tensor"] == 2
    )  # 2 row tiles


def test_training_with_the_nki_rmsnorm_matches_pytorch():
    losses, ref_losses = train_beside_pytorch(8)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    assert losses[-1] < losses[0]
    assert nki.last_run().kernel == "rmsnorm_bwd_kernel"  # the backward ran the NKI kernel


def test_repeated_wrap_nki_calls_trace_once():
    x, y = torch.rand((16, 32)), torch.rand((16, 32))
    for _ in range(3):
        out = torch.zeros((16, 32))
        wrap_nki(add_into)(x, y, out)
        run = nki.last_run()
    assert run.trace_s == 0.0  # the program came from the cache
    torch.testing.assert_close(out, x + y)
