"""Convolutions on neuron (convolution_overrideable and its backward, lowered to
stablehlo.convolution) against the CPU: forward and every gradient, 1-d to 3-d, strides,
padding, dilation, groups and transposed convolutions, with no CPU fallback; shapes the
lowering does not take fall back to the CPU and still give its result."""

import pytest
import torch
import torch.nn.functional as F

import vtrn

# Gradients sum hundreds of products in an order that differs from the CPU kernel's: the
# absolute tolerance scales with the largest value (float32 rounding of a sum is relative to
# its terms' size, not to a result that cancels to near zero).
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 1.6e-2, torch.float16: 2e-3}


def assert_close(got, want, dtype, name):
    tol = TOLERANCE[dtype]
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got, want, rtol=tol, atol=tol * scale, msg=lambda m: f"{name}: {m}")


CONV_OPS = {"aten::convolution_overrideable", "aten::convolution_backward_overrideable"}


def conv_and_grads(device, fn, x, w, b, grad, **kwargs):
    xx, ww = x.to(device).requires_grad_(), w.to(device).requires_grad_()
    bb = b.to(device).requires_grad_() if b is not None else None
    out = fn(xx, ww, bb, **kwargs)
    inputs = (xx, ww) + ((bb,) if bb is not None else ())
    grads = torch.autograd.grad(out, inputs, grad.to(device))
    return [out.detach().cpu()] + [g.cpu() for g in grads]


def check(fn, x_shape, w_shape, dtype, bias=True, seed=0, **kwargs):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(x_shape, generator=gen).to(dtype)
    w = (torch.randn(w_shape, generator=gen) * 0.2).to(dtype)
    out_channels = (
        w_shape[1] * kwargs.get("groups", 1) if fn.__name__.startswith("conv_t") else w_shape[0]
    )
    b = torch.randn(out_channels, generator=gen).to(dtype) if bias else None
    want_out = fn(x, w, b, **kwargs)
    grad = torch.randn(want_out.shape, generator=gen).to(dtype)
    vtrn.clear_op_tracking()
    got = conv_and_grads("neuron", fn, x, w, b, grad, **kwargs)
    assert vtrn.get_fallback_ops() == []
    assert CONV_OPS <= set(vtrn.get_executed_ops())
    want = conv_and_grads("cpu", fn, x, w, b, grad, **kwargs)
    for g, w_, name in zip(got, want, ["out", "grad_input", "grad_weight", "grad_bias"]):
        assert g.shape == w_.shape, name
        assert_close(g, w_, dtype, name)


DTYPES = pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.bfloat16, torch.float16],
    ids=["float32", "bfloat16", "float16"],
)

CONV2D = [
    ("3x3", (4, 3, 16, 16), (8, 3, 3, 3), {"padding": 1}),
    ("stride 2", (2, 8, 15, 17), (16, 8, 3, 3), {"stride": 2, "padding": 1}),
    ("7x7 stem", (2, 3, 32, 32), (16, 3, 7, 7), {"stride": 2, "padding": 3}),
    ("dilation", (2, 4, 12, 12), (6, 4, 3, 3), {"dilation": 2, "padding": 2}),
    (
        "asymmetric",
        (1, 4, 9, 13),
        (5, 4, 2, 3),
        {"stride": (2, 1), "padding": (0, 1), "dilation": (1, 2)},
    ),
    ("groups", (2, 8, 10, 10), (12, 4, 3, 3), {"groups": 2, "padding": 1}),
    ("depthwise", (2, 16, 12, 12), (16, 1, 3, 3), {"groups": 16, "stride": 2, "padding": 1}),
    ("1x1", (4, 32, 8, 8), (64, 32, 1, 1), {}),
    ("patch embedding", (2, 3, 32, 32), (64, 3, 8, 8), {"stride": 8}),
]


@DTYPES
@pytest.mark.parametrize("case", CONV2D, ids=[c[0] for c in CONV2D])
def test_conv2d_matches_cpu(case, dtype):
    _, x_shape, w_shape, kwargs = case
    check(F.conv2d, x_shape, w_shape, dtype, **kwargs)


@DTYPES
def test_conv1d_and_conv3d_match_cpu(dtype):
    check(F.conv1d, (3, 6, 40), (8, 3, 5), dtype, stride=2, padding=2, groups=2)
    check(
        F.conv3d, (2, 3, 6, 7, 8), (4, 3, 3, 3, 3), dtype, padding=1, stride=(1, 2, 1), bias=False
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stride": 2, "padding": 1, "output_padding": 1},
        {"stride": 3, "groups": 2, "dilation": 2},
        {"stride": 2, "dilation": 3, "output_padding": 2},
        {},
    ],
    ids=["stride-output-padding", "groups-dilation", "output-padding-above-stride", "plain"],
)
def test_conv_transpose2d_matches_cpu(kwargs):
    check(F.conv_transpose2d, (2, 4, 7, 6), (4, 3, 3, 3), torch.float32, **kwargs)


def test_conv_transpose1d_matches_cpu():
    check(F.conv_transpose1d, (2, 6, 11), (6, 2, 4), torch.float32, stride=2, padding=1, groups=3)


def test_padding_same_and_no_bias_match_cpu():
    check(F.conv2d, (2, 4, 10, 11), (6, 4, 4, 3), torch.float32, bias=False, padding="same")


def test_module_trains_like_cpu():
    """nn.Conv2d in a small CNN: three SGD steps on neuron and on the CPU give the same losses
    and weights, with no fallback in the convolutions."""

    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(8 * 8 * 8, 10),
        )

    gen = torch.Generator().manual_seed(5)
    data = torch.randn(4, 3, 16, 16, generator=gen)
    target = torch.randint(0, 10, (4,), generator=gen)

    def train(device):
        model = make().to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(model(data.to(device)), target.to(device))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in model.parameters()]

    vtrn.clear_op_tracking()
    got_losses, got_params = train("neuron")
    assert not CONV_OPS & set(vtrn.get_fallback_ops())
    assert CONV_OPS <= set(vtrn.get_executed_ops())
    want_losses, want_params = train("cpu")
    torch.testing.assert_close(torch.tensor(got_losses), torch.tensor(want_losses))
    for g, w in zip(got_params, want_params):
        torch.testing.assert_close(g, w)


def test_float64_falls_back_to_the_cpu_correctly():
    """float64 is not lowered: the convolution runs on the CPU (in float32, the device's policy)
    instead of raising convolution_overrideable's NotImplementedError."""
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 8, 8, generator=gen, dtype=torch.float64)
    w = torch.randn(4, 3, 3, 3, generator=gen, dtype=torch.float64)
    xx, ww = x.to("neuron").requires_grad_(), w.to("neuron").requires_grad_()
    vtrn.clear_op_tracking()
    # The float64 policy warns once per process (an earlier test may have seen it): the op
    # tracking shows the fallback instead.
    out = F.conv2d(xx, ww, padding=1)
    gx, gw = torch.autograd.grad(out.sum(), (xx, ww))
    assert CONV_OPS <= set(vtrn.get_fallback_ops())
    xf, wf = x.float().requires_grad_(), w.float().requires_grad_()
    want = F.conv2d(xf, wf, padding=1)
    want_gx, want_gw = torch.autograd.grad(want.sum(), (xf, wf))
    torch.testing.assert_close(out.detach().cpu(), want.detach().double(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gx.cpu(), want_gx.double(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gw.cpu(), want_gw.double(), rtol=1e-5, atol=1e-5)


def test_bad_groups_raise_pytorchs_error():
    x = torch.randn(1, 4, 5, 5, device="neuron")
    w = torch.randn(6, 3, 3, 3, device="neuron")
    with pytest.raises(RuntimeError) as device_error:
        F.conv2d(x, w, groups=3)
    with pytest.raises(RuntimeError) as cpu_error:
        F.conv2d(x.cpu(), w.cpu(), groups=3)
    assert str(device_error.value) == str(cpu_error.value)
