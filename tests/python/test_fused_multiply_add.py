"""Ops whose CPU kernels round a multiply and an add once, on `neuron` bit for bit.

ATen's float kernels compute add/sub with alpha as vec::fmadd(other, alpha, self), addcmul as
fmadd(value * t1, t2, self), lerp as fmadd(weight, end - self, self) (or, for |weight| >= 0.5,
fmadd(weight - 1, end - self, end)), and addcdiv as self + value * t1 / t2 from left to right.
A multiply rounded before the add differs from them in the last bit of a quarter of the
elements; over optimizer steps those bits compound, so a training run on `neuron` left the
CPU's trajectory. The reference here is the CPU itself, and each case also checks that the
rounded-twice formula differs from it on the same inputs (the test would catch a regression).
"""

from __future__ import annotations

import os

import pytest
import torch
from conftest import run_python

N = 100_003  # vector bodies, a tail, and more than one parallel chunk


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(((a == b) | (a.isnan() & b.isnan())).all())


def mismatches(a: torch.Tensor, b: torch.Tensor) -> int:
    return int((~((a == b) | (a.isnan() & b.isnan()))).sum())


def inputs(n: int = N, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n, generator=g),
        torch.randn(n, generator=g),
        torch.rand(n, generator=g) + 0.5,
    )


@pytest.mark.parametrize("alpha", [3.0, 0.1, -0.7])
@pytest.mark.parametrize("op", [torch.add, torch.sub])
def test_add_and_sub_with_alpha(op, alpha):
    a, b, _ = inputs()
    want = op(a, b, alpha=alpha)
    got = op(a.to("neuron"), b.to("neuron"), alpha=alpha).cpu()
    assert bits_equal(got, want), f"{mismatches(got, want)} of {N} differ"
    sign = 1 if op is torch.add else -1
    assert mismatches(a + b * (sign * alpha), want) > N // 50
    # in place, broadcast, and a short tensor (ATen's scalar loop)
    d = a.to("neuron")
    getattr(d, op.__name__ + "_")(b[:1].to("neuron"), alpha=alpha)
    assert bits_equal(d.cpu(), op(a, b[:1], alpha=alpha))
    assert bits_equal(
        op(a[:7].to("neuron"), b[:7].to("neuron"), alpha=alpha).cpu(), op(a[:7], b[:7], alpha=alpha)
    )


def test_foreach_add_with_alpha():
    a, b, _ = inputs()
    xs, ys = [a[:1000], a[1000:]], [b[:1000], b[1000:]]
    got = torch._foreach_add([x.to("neuron") for x in xs], [y.to("neuron") for y in ys], alpha=-0.3)
    for g, x, y in zip(got, xs, ys):
        assert bits_equal(g.cpu(), torch.add(x, y, alpha=-0.3))


@pytest.mark.parametrize("value", [0.37, -1.3])
def test_addcmul_and_addcdiv(value):
    a, b, c = inputs()
    an, bn, cn = a.to("neuron"), b.to("neuron"), c.to("neuron")
    want = torch.addcmul(a, b, c, value=value)
    assert bits_equal(torch.addcmul(an, bn, cn, value=value).cpu(), want)
    assert mismatches(a + (value * b) * c, want) > N // 50
    want = torch.addcdiv(a, b, c, value=value)
    assert bits_equal(torch.addcdiv(an, bn, cn, value=value).cpu(), want)
    assert mismatches(a + value * (b / c), want) > N // 50


@pytest.mark.parametrize("weight", [0.3, 0.7, "tensor"])
def test_lerp(weight):
    a, b, w = inputs()
    if weight == "tensor":
        w = w - 0.5  # [0, 1): both branches
        got = torch.lerp(a.to("neuron"), b.to("neuron"), w.to("neuron")).cpu()
    else:
        w = torch.tensor(weight)
        got = torch.lerp(a.to("neuron"), b.to("neuron"), weight).cpu()
    want = torch.lerp(a, b, w)
    assert bits_equal(got, want), f"{mismatches(got, want)} of {N} differ"
    naive = torch.where(w.abs() < 0.5, a + w * (b - a), b - (b - a) * (1 - w))
    assert mismatches(naive, want) > N // 50


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
        lambda ps: torch.optim.Adam(ps, lr=1e-3),
        lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.1),
    ],
    ids=["sgd-momentum", "sgd-nesterov", "adam", "adamw"],
)
def test_optimizer_steps_follow_the_cpu_bit_for_bit(make):
    """The default implementations: a for-loop over tensors on the CPU, the _foreach_ ops on
    `neuron` (PyTorch picks foreach for a PrivateUse1 device). Adam's sqrt is torch.sqrt's,
    MKL's (test_vecmath_parity.py)."""

    def run(device):
        torch.manual_seed(0)
        ps = [
            torch.randn(300, 37).to(device).requires_grad_(),
            torch.randn(513).to(device).requires_grad_(),
        ]
        opt = make(ps)
        g = torch.Generator().manual_seed(1)
        for _ in range(5):
            for p in ps:
                p.grad = torch.randn(p.shape, generator=g).to(device)
            opt.step()
        return [p.detach().cpu() for p in ps]

    for got, want in zip(run("neuron"), run("cpu")):
        assert bits_equal(got, want), f"{mismatches(got, want)} of {want.numel()} differ"


def test_optimizer_steps_under_aee_follow_the_cpu_bit_for_bit():
    """Each _foreach_ op of a step is one module whose fused loops read its scalars (learning
    rate, betas, the bias corrections) as scalars and write the parameters and moments where
    they lie (an output over its own input), with AEE on as in a training run: the CPU's bits."""
    code = """
        import torch, vtrn
        def run(device, make):
            torch.manual_seed(0)
            ps = [torch.randn(s).to(device).requires_grad_() for s in ((300, 37), (513,), (4, 2500))]
            opt = make(ps)
            g = torch.Generator().manual_seed(1)
            for _ in range(4):
                for p in ps:
                    p.grad = torch.randn(p.shape, generator=g).to(device)
                opt.step()
            return [p.detach().cpu() for p in ps]
        makes = {
            "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.1, foreach=True),
            "adam-amsgrad": lambda ps: torch.optim.Adam(ps, lr=1e-3, amsgrad=True, foreach=True),
            "sgd-momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True),
        }
        for name, make in makes.items():
            for got, want in zip(run("neuron", make), run("cpu", make)):
                same = (got == want) | (got.isnan() & want.isnan())
                print(name, int((~same).sum()), want.numel())
    """
    env = dict(os.environ, TORCH_NEURONX_ENABLE_CONCATENATION="1")
    proc = run_python(code, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.split()
    assert len(lines) == 3 * 3 * 3, proc.stdout
    for line in proc.stdout.splitlines():
        name, differ, total = line.split()
        assert differ == "0", f"{name}: {differ} of {total} elements differ"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_activation_backward_formulas(dtype):
    """tanh_backward is g * (1 - y * y) with the multiply-add fused, silu_backward
    g * s * (1 + x * (1 - s)) likewise, sigmoid_backward g * (1 - y) * y left to right."""
    g = torch.Generator().manual_seed(2)
    grad = torch.randn(N, generator=g).to(dtype)
    y = (torch.rand(N, generator=g) * 2 - 1).to(dtype)
    x = (torch.randn(N, generator=g) * 3).to(dtype)
    s = torch.rand(N, generator=g).to(dtype)
    cases = {
        "tanh_backward": (torch.ops.aten.tanh_backward, grad, y),
        "sigmoid_backward": (torch.ops.aten.sigmoid_backward, grad, s),
        "silu_backward": (torch.ops.aten.silu_backward, grad, x),
    }
    for name, (op, a, b) in cases.items():
        want = op(a, b)
        got = op(a.to("neuron"), b.to("neuron")).cpu()
        assert bits_equal(got, want), f"{name} {dtype}: {mismatches(got, want)} of {N} differ"
    if dtype == torch.float32:  # the rounded-twice formulas differ from the CPU
        assert mismatches(grad * (1 - y * y), torch.ops.aten.tanh_backward(grad, y)) > N // 50
        want = torch.ops.aten.sigmoid_backward(grad, s)
        assert mismatches(grad * ((1 - s) * s), want) > N // 50
