"""complex64 add, sub, mul and polar run natively on neuron and give the CPU's results: forward
and backward of the rotary embedding torchtitan and Meta's Llama apply
(view_as_complex(x) * freqs_cis, then view_as_real), broadcasting, real and Python-number
operands, in-place and out= forms, and the CPU's inf/nan results.

The CPU multiplies complex64 with vector instructions, (ac - bd, ad + bc) with each product
rounded, except in its scalar loop over the last elements of a row, where the compiler may
fuse a product into the sum; so results are compared at complex64's default tolerances
(torch.testing.assert_close), which those differences stay well within."""

import os

import pytest
import torch
from conftest import run_python

import vtrn


def rand(*shape, dtype=torch.complex64, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g)
    return torch.randn(shape, generator=g).to(dtype)


def native(fn, *args, **kwargs):
    """fn on neuron copies of |args|, with the ops that fell back to the CPU."""
    vtrn.clear_op_tracking()
    moved = [a.to("neuron") if isinstance(a, torch.Tensor) else a for a in args]
    out = fn(*moved, **kwargs)
    return out.cpu(), vtrn.get_fallback_ops()


BINARY = {
    "mul": lambda a, b: a * b,
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2.5),
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=-3),
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize(
    "shapes",
    [((37,), (37,)), ((4, 1, 6), (5, 1)), ((2, 3), ()), ((), (3, 2))],
    ids=["same", "broadcast", "zero-dim-other", "zero-dim-self"],
)
def test_complex_binary_matches_cpu_natively(clean_tracking, op, shapes):
    a, b = rand(*shapes[0], seed=1), rand(*shapes[1], seed=2)
    got, fallbacks = native(BINARY[op], a, b)
    assert fallbacks == []
    torch.testing.assert_close(got, BINARY[op](a, b))


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize(
    "other",
    [
        rand(4, 5, dtype=torch.float32, seed=3),
        rand(5, dtype=torch.bfloat16, seed=4),
        rand(dtype=torch.float64, seed=5),  # a 0-d float64 tensor keeps complex64
        (rand(5, seed=6).real * 7).long(),
        2.5,
        -3,
    ],
    ids=["float32", "bfloat16", "float64-0d", "int64", "float", "int"],
)
def test_complex_with_a_real_operand_matches_cpu(clean_tracking, op, other):
    a = rand(4, 5, seed=7)
    fn = BINARY[op]
    for args in ((a, other), (other, a)):
        if not isinstance(args[0], torch.Tensor):
            continue  # 2.5 * a runs as a * 2.5
        got, fallbacks = native(fn, *args)
        assert fallbacks == []
        torch.testing.assert_close(got, fn(*args))


def test_infinities_and_nans_as_on_the_cpu(clean_tracking):
    inf, nan = float("inf"), float("nan")
    values = [0, 1, -1, inf, -inf, nan, -0.0, 1e-30, 3e38]
    parts = torch.tensor([[x, y] for x in values for y in values], dtype=torch.float32)
    a = torch.view_as_complex(parts)
    b = torch.view_as_complex(parts.flip(0).contiguous())
    for name, fn in BINARY.items():
        got, fallbacks = native(fn, a, b)
        assert fallbacks == [], name
        # 0 + (inf + 1j) is inf + nanj on the CPU: alpha multiplies `other` as a complex.
        torch.testing.assert_close(got, fn(a, b), equal_nan=True, msg=name)


def test_in_place_out_and_strided_forms(clean_tracking):
    a, b = rand(6, 8, seed=8), rand(8, 6, seed=9).t()  # b is a transposed view
    x = a.to("neuron")
    vtrn.clear_op_tracking()
    x.mul_(b.to("neuron"))
    x.add_(b.to("neuron"), alpha=2)
    x.sub_(1.5)
    out = torch.empty(0, dtype=torch.complex64, device="neuron")
    torch.mul(x, b.to("neuron"), out=out)
    assert vtrn.get_fallback_ops() == []
    expected = a.clone()
    expected.mul_(b).add_(b, alpha=2).sub_(1.5)
    torch.testing.assert_close(x.cpu(), expected)
    torch.testing.assert_close(out.cpu(), expected * b)


def test_view_as_complex_mul_writes_through_the_real_tensor(clean_tracking):
    x = rand(3, 4, 2, dtype=torch.float32, seed=10)
    w = rand(4, seed=11)
    xn = x.to("neuron")
    vtrn.clear_op_tracking()
    torch.view_as_complex(xn).mul_(w.to("neuron"))
    assert vtrn.get_fallback_ops() == []
    torch.view_as_complex(x).mul_(w)
    torch.testing.assert_close(xn.cpu(), x)


def test_polar_matches_cpu_natively(clean_tracking):
    magnitude = rand(16, 8, dtype=torch.float32, seed=12).abs()
    angle = rand(16, 8, dtype=torch.float32, seed=13) * 10
    got, fallbacks = native(torch.polar, magnitude, angle)
    assert fallbacks == []
    assert got.dtype == torch.complex64
    torch.testing.assert_close(got, torch.polar(magnitude, angle))


def precompute_freqs_cis(dim, end, theta=10000.0, device="cpu"):
    """torchtitan's and Meta's Llama rotary table."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float().to(device)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    """torchtitan's apply_rotary_emb: complex multiply by the broadcast table."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis[: xq.shape[1]].view(1, xq.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rotary_embedding_forward_and_backward_are_native(clean_tracking, dtype):
    batch, seq, heads, head_dim = 2, 12, 4, 16
    xq = rand(batch, seq, heads, head_dim, dtype=dtype, seed=14)
    xk = rand(batch, seq, 2, head_dim, dtype=dtype, seed=15)
    g = rand(batch, seq, heads, head_dim, dtype=dtype, seed=16)

    def run(device):
        q = xq.to(device, copy=True).requires_grad_()
        k = xk.to(device, copy=True).requires_grad_()
        q_out, k_out = apply_rotary_emb(q, k, precompute_freqs_cis(head_dim, 32, device=device))
        ((q_out * g.to(device)).sum() + k_out.square().sum()).backward()
        return [t.detach().cpu() for t in (q_out, k_out, q.grad, k.grad)]

    expected = run("cpu")
    vtrn.clear_op_tracking()
    got = run("neuron")
    assert vtrn.get_fallback_ops() == []
    assert "aten::mul.Tensor" in vtrn.get_executed_ops()
    for e, r in zip(expected, got):
        torch.testing.assert_close(r, e)


def test_unsupported_complex_calls_keep_the_cpus_results_and_errors(clean_tracking):
    a = rand(5, seed=17)
    # A complex Python number (a complex128 scalar) falls back, with the CPU's values.
    for fn in (lambda x: x * 1j, lambda x: torch.add(x, x, alpha=2 - 1j)):
        got = fn(a.to("neuron"))
        assert got.device.type == "neuron"
        torch.testing.assert_close(got.cpu(), fn(a))
    assert vtrn.get_fallback_ops() != []
    # A complex result can't be written into a real tensor: PyTorch's own error.
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Float"):
        torch.ones(5, device="neuron").mul_(a.to("neuron"))


def test_rotary_embedding_under_adaptive_eager_execution_matches_op_by_op():
    """With AEE the complex multiplies join fused groups; the results stay the CPU's."""
    code = """
        import torch, vtrn
        g = torch.Generator().manual_seed(0)
        x = torch.randn(2, 8, 3, 4, 2, generator=g)
        w = torch.randn(8, 1, 4, 2, generator=g)
        def f(x, w):
            c = torch.view_as_complex(x) * torch.view_as_complex(w)
            return torch.view_as_real(c * 2 + c).sum()
        expected = f(x, w)
        vtrn.reset_metrics()
        got = f(x.to("neuron"), w.to("neuron")).cpu()
        assert vtrn.get_fallback_ops() == [], vtrn.get_fallback_ops()
        torch.testing.assert_close(got, expected)
        print(vtrn.metrics()["fused_ops"])
    """
    env = dict(os.environ, TORCH_NEURONX_ENABLE_CONCATENATION="1")
    proc = run_python(code, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # mul, mul by 2 and add: one group, which the sum's host read ends.
    assert proc.stdout.split() == ["3"], proc.stdout
