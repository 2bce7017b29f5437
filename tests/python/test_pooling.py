"""Pooling and RMS norm on neuron against the CPU, forward and backward, with no CPU fallback:
max pooling with indices (padding, dilation, ceil_mode, ties and NaN), average pooling
(count_include_pad, ceil_mode, divisor_override), adaptive average and max pooling (windows of
uneven sizes), 1-d to 3-d, batched and unbatched; and _fused_rms_norm, which torch.rms_norm and
nn.RMSNorm reach."""

import pytest
import torch
import torch.nn.functional as F

import vtrn

DTYPES = pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["float32", "bfloat16", "float16"]
)


def run(device, fn, x, grad):
    xx = x.to(device).requires_grad_(x.is_floating_point())
    out = fn(xx)
    outs = out if isinstance(out, tuple) else (out,)
    result = [o.detach().cpu() for o in outs]
    if x.is_floating_point():
        result.append(torch.autograd.grad(outs[0], xx, grad.to(device))[0].cpu())
    return result


def check(fn, shape, dtype, seed=0, x=None, native=None):
    gen = torch.Generator().manual_seed(seed)
    if x is None:
        x = torch.randn(shape, generator=gen).to(dtype)
    want_out = fn(x)
    first = want_out[0] if isinstance(want_out, tuple) else want_out
    grad = torch.randn(first.shape, generator=gen).to(dtype) if x.is_floating_point() else None
    vtrn.clear_op_tracking()
    got = run("neuron", fn, x, grad)
    assert vtrn.get_fallback_ops() == []
    if native is not None:
        assert native <= set(vtrn.get_executed_ops())
    want = run("cpu", fn, x, grad)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True)


MAX_CASES = [
    # (fn, input shape)
    (lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True), (2, 3, 11)),
    (lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), (2, 3, 9, 10)),
    (lambda x: F.max_pool2d(x, 2, return_indices=True), (3, 8, 8)),
    (lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 0), (2, 1), True, True), (1, 2, 11, 7)),
    (lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True, return_indices=True), (2, 2, 8, 8)),
    (lambda x: F.max_pool3d(x, 2, 2, 1, return_indices=True), (1, 2, 5, 6, 7)),
    (lambda x: F.max_pool3d(x, (2, 3, 1), 1, 0, 1, True, True), (2, 4, 4, 5)),
]


@DTYPES
@pytest.mark.parametrize("case", range(len(MAX_CASES)))
def test_max_pool(case, dtype, clean_tracking):
    fn, shape = MAX_CASES[case]
    check(fn, shape, dtype)


def test_max_pool_ties_nan_and_inf(clean_tracking):
    x = torch.tensor([[[1.0, 1.0, 3.0, 3.0, -float("inf"), -float("inf")]]])
    check(lambda t: F.max_pool1d(t, 2, 2, return_indices=True), None, torch.float32, x=x)
    x = torch.tensor([[[float("nan"), 1.0, 5.0, float("nan"), 2.0, float("nan")]]])
    check(lambda t: F.max_pool1d(t, 3, 1, return_indices=True), None, torch.float32, x=x)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8])
def test_max_pool_integers(dtype, clean_tracking):
    x = torch.randint(-100 if dtype != torch.uint8 else 0, 100, (2, 3, 7, 6)).to(dtype)
    check(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), None, dtype, x=x)


AVG_CASES = [
    (lambda x: F.avg_pool1d(x, 3, 2, 1), (2, 3, 11)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1), (2, 3, 9, 10)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (2, 3, 9, 10)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (1, 2, 8, 8)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), (1, 2, 8, 8)),
    (lambda x: F.avg_pool2d(x, (2, 3), (1, 2), (1, 1), divisor_override=5), (3, 7, 6)),
]
AVG3D_CASES = [
    (lambda x: F.avg_pool3d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False), (1, 2, 5, 6, 7)),
    (lambda x: F.avg_pool3d(x, 3, 1, 1, divisor_override=4), (2, 4, 4, 5)),
]


@DTYPES
@pytest.mark.parametrize("case", range(len(AVG_CASES)))
def test_avg_pool(case, dtype, clean_tracking):
    fn, shape = AVG_CASES[case]
    check(fn, shape, dtype)


@pytest.mark.parametrize("case", range(len(AVG3D_CASES)))
def test_avg_pool3d(case, clean_tracking):
    fn, shape = AVG3D_CASES[case]
    check(fn, shape, torch.float32)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_avg_pool3d_half_raises_the_cpus_error(dtype):
    x = torch.randn(1, 2, 4, 4, 4).to(dtype)
    with pytest.raises(NotImplementedError) as cpu:
        F.avg_pool3d(x, 2)
    with pytest.raises(NotImplementedError) as dev:
        F.avg_pool3d(x.to("neuron"), 2)
    assert str(dev.value) == str(cpu.value)


def test_avg_pool_int64(clean_tracking):
    x = torch.randint(-50, 50, (2, 3, 7, 6))
    check(lambda t: F.avg_pool2d(t, 3, 2, 1), None, torch.int64, x=x)
    check(lambda t: F.avg_pool2d(t, 2, 1, 1, count_include_pad=False), None, torch.int64, x=x)


ADAPTIVE_CASES = [
    (lambda x: F.adaptive_avg_pool1d(x, 4), (2, 3, 10)),
    (lambda x: F.adaptive_avg_pool2d(x, (3, 4)), (2, 3, 7, 9)),
    (lambda x: F.adaptive_avg_pool2d(x, (4, 4)), (3, 8, 8)),
    (lambda x: F.adaptive_avg_pool2d(x, (5, 7)), (1, 2, 3, 4)),
    (lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), (1, 2, 5, 7, 4)),
    (lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), (2, 3, 10)),
    (lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True), (2, 3, 7, 9)),
    (lambda x: F.adaptive_max_pool2d(x, 1, return_indices=True), (2, 3, 5, 5)),
    (lambda x: F.adaptive_max_pool3d(x, (2, 3, 2), return_indices=True), (2, 5, 7, 4)),
]


@DTYPES
@pytest.mark.parametrize("case", range(len(ADAPTIVE_CASES)))
def test_adaptive_pool(case, dtype, clean_tracking):
    fn, shape = ADAPTIVE_CASES[case]
    check(fn, shape, dtype)


def test_pooling_ops_are_lowered(clean_tracking):
    check(
        lambda x: F.max_pool2d(x, 2),
        (1, 2, 4, 4),
        torch.float32,
        native={"aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward"},
    )
    check(
        lambda x: F.avg_pool3d(x, 2),
        (1, 2, 4, 4, 4),
        torch.float32,
        native={"aten::avg_pool3d", "aten::avg_pool3d_backward"},
    )
    check(
        lambda x: F.adaptive_avg_pool2d(x, 3),
        (1, 2, 7, 5),
        torch.float32,
        native={"aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d_backward"},
    )
    check(
        lambda x: F.adaptive_max_pool3d(x, 2),
        (1, 2, 5, 4, 3),
        torch.float32,
        native={"aten::adaptive_max_pool3d", "aten::adaptive_max_pool3d_backward"},
    )


def test_invalid_pooling_raises_pytorchs_error():
    x = torch.randn(1, 1, 4, 4)
    with pytest.raises(RuntimeError) as cpu:
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError) as dev:
        F.max_pool2d(x.to("neuron"), 2, padding=2)
    assert str(dev.value) == str(cpu.value)


@DTYPES
@pytest.mark.parametrize("weight", [True, False], ids=["weight", "no_weight"])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(dtype, weight, eps, clean_tracking):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(3, 5, 8, generator=gen).to(dtype)
    w = torch.randn(5, 8, generator=gen).to(dtype) if weight else None
    grad = torch.randn(3, 5, 8, generator=gen).to(dtype)

    def run_on(device):
        xx = x.to(device).requires_grad_()
        ww = w.to(device).requires_grad_() if weight else None
        out = F.rms_norm(xx, (5, 8), ww, eps)
        inputs = (xx, ww) if weight else (xx,)
        return [out.detach().cpu()] + [
            g.cpu() for g in torch.autograd.grad(out, inputs, grad.to(device))
        ]

    vtrn.clear_op_tracking()
    got = run_on("neuron")
    assert vtrn.get_fallback_ops() == []
    assert {"aten::_fused_rms_norm", "aten::_fused_rms_norm_backward"} <= set(
        vtrn.get_executed_ops()
    )
    want = run_on("cpu")
    for g, w_ in zip(got, want):
        assert g.dtype == w_.dtype
        torch.testing.assert_close(g, w_)


def test_rms_norm_module_trains_like_cpu(clean_tracking):
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.RMSNorm(16))
    dev = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.RMSNorm(16))
    dev.load_state_dict(cpu.state_dict())
    dev.to("neuron")
    x = torch.randn(4, 16)
    for model, inp in ((cpu, x), (dev, x.to("neuron"))):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            model(inp).square().mean().backward()
            opt.step()
    assert vtrn.get_fallback_ops() == []
    for a, b in zip(cpu.parameters(), dev.parameters()):
        torch.testing.assert_close(b.detach().cpu(), a.detach())
