"""Normalization layers on neuron against the CPU, forward and backward, with no CPU fallback:
layer norm (native_layer_norm and its backward, not batch norm), group norm, and batch norm
with the running statistics it updates in place."""

import pytest
import torch
import torch.nn.functional as F

import vtrn

# Relative tolerances; the absolute one scales with the largest value of the result (a
# gradient sums many products, and its rounding is relative to their size).
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 1.6e-2, torch.float16: 2e-3}
DTYPES = pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.bfloat16, torch.float16],
    ids=["float32", "bfloat16", "float16"],
)


def run_with_grads(device, fn, tensors, grad):
    leaves = [t.to(device).requires_grad_() if t is not None else None for t in tensors]
    out = fn(*leaves)
    present = [t for t in leaves if t is not None]
    grads = torch.autograd.grad(out, present, grad.to(device))
    return [out.detach().cpu()] + [g.cpu() for g in grads]


def check(fn, tensors, dtype, expected_ops):
    tensors = [t.to(dtype) if t is not None else None for t in tensors]
    want_out = fn(*tensors)
    grad = torch.randn(want_out.shape, generator=torch.Generator().manual_seed(9)).to(dtype)
    vtrn.clear_op_tracking()
    got = run_with_grads("neuron", fn, tensors, grad)
    assert vtrn.get_fallback_ops() == []
    executed = set(vtrn.get_executed_ops())
    assert expected_ops <= executed, executed
    assert "aten::native_batch_norm" not in executed
    want = run_with_grads("cpu", fn, tensors, grad)
    # The CPU's bfloat16/float16 norm backwards sum the parameter gradients row by row in
    # that type (error growing with the row count); vtrn sums in float32 and rounds once. Those
    # gradients are checked against the CPU's float32 computation, rounded.
    exact = run_with_grads(
        "cpu", fn, [t.float() if t is not None else None for t in tensors], grad.float()
    )
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        if dtype != torch.float32 and i >= 2:
            w = exact[i].to(dtype)
        tol = TOLERANCE[dtype]
        scale = max(1.0, w.abs().max().item())
        torch.testing.assert_close(
            g, w, rtol=tol, atol=tol * scale, msg=lambda m, i=i: f"result {i}: {m}"
        )


LAYER_NORM_OPS = {"aten::native_layer_norm", "aten::native_layer_norm_backward"}
GROUP_NORM_OPS = {"aten::native_group_norm", "aten::native_group_norm_backward"}


@DTYPES
@pytest.mark.parametrize(
    "shape,normalized",
    [((4, 17, 128), (128,)), ((3, 5, 6, 7), (6, 7)), ((64,), (64,))],
    ids=["hidden-128", "two-dims", "one-row"],
)
def test_layer_norm_matches_cpu(shape, normalized, dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen) * 3 + 1
    w = torch.randn(normalized, generator=gen)
    b = torch.randn(normalized, generator=gen)
    check(
        lambda x, w, b: F.layer_norm(x, normalized, w, b, eps=1e-5),
        [x, w, b],
        dtype,
        LAYER_NORM_OPS,
    )


def test_layer_norm_without_affine_matches_cpu():
    x = torch.randn(8, 33, generator=torch.Generator().manual_seed(1))
    check(lambda x: F.layer_norm(x, (33,), eps=1e-6), [x], torch.float32, LAYER_NORM_OPS)


def test_layer_norm_statistics_match_cpu():
    """The saved mean and rstd (what the backward reads), dtypes included: bfloat16 input with
    float32 parameters keeps float32 statistics, as the CPU kernel does."""
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(6, 10, 32, generator=gen).bfloat16()
    w, b = torch.randn(32, generator=gen), torch.randn(32, generator=gen)
    for ww, bb in ((w, b), (w.bfloat16(), b.bfloat16())):
        got = torch.native_layer_norm(x.to("neuron"), (32,), ww.to("neuron"), bb.to("neuron"), 1e-5)
        want = torch.native_layer_norm(x, (32,), ww, bb, 1e-5)
        for g, w_ in zip(got, want):
            assert g.dtype == w_.dtype and g.shape == w_.shape
            torch.testing.assert_close(g.cpu(), w_, rtol=1.6e-2, atol=1.6e-2)


def test_layer_norm_module_mixed_precision_matches_cpu():
    """nn.LayerNorm under bfloat16 autocast-style use: bfloat16 activations, float32 weights."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(4, 9, 64, generator=gen).bfloat16()
    ln = torch.nn.LayerNorm(64)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(64, generator=gen))
        ln.bias.copy_(torch.randn(64, generator=gen))
    check(
        lambda x, w, b: F.layer_norm(x, (64,), w.float(), b.float()),
        [x, ln.weight.detach(), ln.bias.detach()],
        torch.bfloat16,
        LAYER_NORM_OPS,
    )


@DTYPES
@pytest.mark.parametrize(
    "groups,shape",
    [(4, (2, 8, 5, 5)), (1, (3, 6, 10)), (6, (2, 6, 3, 4, 2))],
    ids=["2d", "one-group", "per-channel-3d"],
)
def test_group_norm_matches_cpu(groups, shape, dtype):
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(shape, generator=gen) * 2 - 1
    w = torch.randn(shape[1], generator=gen)
    b = torch.randn(shape[1], generator=gen)
    check(lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-5), [x, w, b], dtype, GROUP_NORM_OPS)


BATCH_NORM_OPS = {"aten::native_batch_norm", "vtrn::batch_norm", "aten::native_batch_norm_backward"}


@DTYPES
@pytest.mark.parametrize("shape", [(8, 6, 5, 5), (16, 10)], ids=["2d", "1d"])
def test_batch_norm_training_matches_cpu_running_stats_included(shape, dtype):
    """nn.BatchNorm in training: output, gradients and the running statistics it updates in
    place (with the unbiased variance) after two steps."""
    gen = torch.Generator().manual_seed(6)
    xs = [(torch.randn(shape, generator=gen) * 2 + 0.5).to(dtype) for _ in range(2)]
    grad = torch.randn(shape, generator=gen).to(dtype)
    module = torch.nn.BatchNorm2d if len(shape) == 4 else torch.nn.BatchNorm1d

    def run(device):
        torch.manual_seed(0)
        bn = module(shape[1], momentum=0.2).to(device)
        with torch.no_grad():
            bn.weight.copy_(torch.linspace(0.5, 2, shape[1]))
            bn.bias.copy_(torch.linspace(-1, 1, shape[1]))
        results = []
        for x in xs:
            xx = x.to(device).requires_grad_()
            out = bn(xx.float() if dtype != torch.float32 else xx)
            gx, gw, gb = torch.autograd.grad(out, (xx, bn.weight, bn.bias), grad.float().to(device))
            results += [out.detach(), gx, gw, gb]
        results += [bn.running_mean, bn.running_var, bn.num_batches_tracked]
        return [r.detach().cpu() for r in results]

    vtrn.clear_op_tracking()
    got = run("neuron")
    assert vtrn.get_fallback_ops() == []
    assert BATCH_NORM_OPS <= set(vtrn.get_executed_ops())
    want = run("cpu")
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        scale = max(1.0, w.abs().max().item()) if w.is_floating_point() else 1.0
        tol = TOLERANCE[g.dtype] if g.is_floating_point() else 0
        torch.testing.assert_close(
            g, w, rtol=tol, atol=tol * scale, msg=lambda m, i=i: f"result {i}: {m}"
        )


@DTYPES
def test_batch_norm_evaluation_matches_cpu(dtype):
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(4, 5, 6, 3, generator=gen).to(dtype)
    mean, var = torch.randn(5, generator=gen), torch.rand(5, generator=gen) + 0.5
    w, b = torch.randn(5, generator=gen), torch.randn(5, generator=gen)
    grad = torch.randn(4, 5, 6, 3, generator=gen).to(dtype)

    def run(device):
        xx = x.to(device).requires_grad_()
        ww, bb = w.to(device).requires_grad_(), b.to(device).requires_grad_()
        out = F.batch_norm(xx, mean.to(device), var.to(device), ww, bb, training=False, eps=1e-3)
        return [out] + list(torch.autograd.grad(out, (xx, ww, bb), grad.to(device)))

    vtrn.clear_op_tracking()
    got = run("neuron")
    assert vtrn.get_fallback_ops() == []
    want = run("cpu")
    tol = TOLERANCE[dtype]
    for i, (g, w_) in enumerate(zip(got, want)):
        assert g.dtype == w_.dtype, i
        scale = max(1.0, w_.abs().max().item())
        torch.testing.assert_close(g.detach().cpu(), w_.detach(), rtol=tol, atol=tol * scale)


def test_batch_norm_float64_falls_back_and_updates_running_stats():
    """float64 is not lowered: the CPU computes it (as float32) and the running statistics on
    the device are still updated."""
    gen = torch.Generator().manual_seed(8)
    x = torch.randn(6, 3, 4, generator=gen, dtype=torch.float64)
    bn_dev = torch.nn.BatchNorm1d(3).double().to("neuron")
    bn_cpu = torch.nn.BatchNorm1d(3)
    vtrn.clear_op_tracking()
    with pytest.warns(UserWarning):
        out = bn_dev(x.to("neuron"))
    assert "aten::native_batch_norm" in vtrn.get_fallback_ops()
    want = bn_cpu(x.float())
    torch.testing.assert_close(out.cpu(), want.double().detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(bn_dev.running_mean.cpu(), bn_cpu.running_mean.double())
    torch.testing.assert_close(bn_dev.running_var.cpu(), bn_cpu.running_var.double())
