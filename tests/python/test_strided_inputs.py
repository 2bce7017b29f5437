"""Non-contiguous inputs on `neuron`: a fused loop reads a view where it lies (a rotary
embedding's even and odd halves, a transposed head split, an expand, a stepped slice), and any
other kernel (a matmul, attention, a reduce chain) gets a dense copy. Every result must be the
CPU's, bit for bit (a few within float32 tolerances, see CLOSE), with Adaptive Eager Execution off (in this process) and on (a
subprocess: the switch is read at startup)."""

import json
import os
import subprocess
import sys

import pytest
import torch


def rotary(x, cos, sin):
    """Llama's interleaved rotary embedding of [batch, seq, heads, dim] projections."""
    q = x.transpose(1, 2)
    a, b = q[..., ::2], q[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)


def cases():
    """name -> function of a device, each building its inputs from a fixed seed."""

    def inputs(device, *shapes, dtype=torch.float32):
        g = torch.Generator().manual_seed(sum(len(s) for s in shapes) + len(shapes))
        return [torch.randn(*s, generator=g).to(dtype).to(device) for s in shapes]

    def rot(device, dtype=torch.float32):
        x, cos, sin = inputs(device, (8, 128, 8, 32), (128, 16), (128, 16), dtype=dtype)
        return rotary(x, cos, sin)

    def sub_transposed(device):
        a, b = inputs(device, (8, 128, 8, 16), (8, 128, 8, 16))
        return a.transpose(1, 2) - b.transpose(1, 2)

    def div_expand(device):
        (r,) = inputs(device, (8, 128, 1))
        return r.expand(8, 128, 256) / 256.0

    def stepped_slice(device):
        x, y = inputs(device, (300, 90), (100, 45))
        return x[::3, 1::2] * y + x[1::3, ::2]

    def permuted_sum(device):
        (x,) = inputs(device, (16, 33, 70))
        return x.permute(2, 0, 1).sum(-1)

    def permuted_mean_softmax(device):
        (x,) = inputs(device, (4, 64, 6, 48))
        return torch.softmax(x.transpose(1, 2), dim=-1) + x.transpose(1, 2).mean(-1, keepdim=True)

    def attention_of_views(device):
        (x,) = inputs(device, (2, 64, 4, 32))
        q = x.transpose(1, 2)
        return torch.nn.functional.scaled_dot_product_attention(q, q[..., :, :], q, is_causal=True)

    def matmul_of_stepped(device):
        a, b = inputs(device, (64, 96), (48, 40))
        return a[:, ::2] @ b

    def integers(device):
        x = torch.arange(600, device=device).reshape(20, 30)
        return x.t()[::3, :7] + x[::3, 1::3].t()

    def where_expand(device):
        m = torch.arange(12, device=device).reshape(12, 1) % 3 == 0
        (v,) = inputs(device, (12, 40))
        return torch.where(m.expand(12, 40), v.t().t(), -v[:, ::1])

    return {
        "rotary": rot,
        "rotary_bf16": lambda d: rot(d, torch.bfloat16),
        "sub_transposed": sub_transposed,
        "div_expand": div_expand,
        "stepped_slice": stepped_slice,
        "permuted_sum": permuted_sum,
        "permuted_mean_softmax": permuted_mean_softmax,
        "attention_of_views": attention_of_views,
        "matmul_of_stepped": matmul_of_stepped,
        "integers": integers,
        "where_expand": where_expand,
    }


# Compared within float32 tolerances instead of bit for bit, as for contiguous inputs: the CPU
# runs flash attention (another summation order), its softmax differs in the last bit on some
# rows, and ATen sums a permuted tensor in an order of its own (vtrn sums the view in the order
# the CPU sums its contiguous copy).
CLOSE = {"attention_of_views", "permuted_mean_softmax", "permuted_sum"}


def same(name, got, expected):
    if got.dtype != expected.dtype:
        return False
    if name in CLOSE:
        return torch.allclose(got, expected, rtol=1.3e-6, atol=1e-5)
    return torch.equal(got, expected)


def compare_all():
    """name -> whether the neuron result equals the CPU's exactly."""
    import vtrn  # noqa: F401

    out = {}
    for name, fn in cases().items():
        cpu = fn("cpu")
        dev = fn("neuron").cpu()
        out[name] = bool(same(name, dev, cpu))
    return out


@pytest.mark.parametrize("name", sorted(cases()))
def test_a_view_gives_the_cpus_result(name):
    import vtrn  # noqa: F401

    fn = cases()[name]
    expected = fn("cpu")
    got = fn("neuron").cpu()
    assert same(name, got, expected), (got.float() - expected.float()).abs().max()


def test_views_with_adaptive_eager_execution_give_the_cpus_results():
    env = dict(os.environ, TORCH_NEURONX_ENABLE_CONCATENATION="1")
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import test_strided_inputs as t; "
        "print(json.dumps(t.compare_all()))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, os.path.dirname(__file__)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(results) == sorted(cases())
    assert all(results.values()), {k: v for k, v in results.items() if not v}


def test_a_permuted_sum_is_the_cpus_sum_of_its_contiguous_copy():
    import vtrn  # noqa: F401

    g = torch.Generator().manual_seed(5)
    x = torch.randn(16, 33, 70, generator=g)
    expected = x.permute(2, 0, 1).contiguous().sum(-1)
    assert torch.equal(x.to("neuron").permute(2, 0, 1).sum(-1).cpu(), expected)
