"""Ops whose output size depends on the data (nonzero, masked_select, boolean indexing,
bincount), masked_scatter, scatter_reduce, tril/triu_indices and topk(sorted=False) run natively
and give the CPU's results: forward, out=, in-place and backward, zero-size inputs included.

Each case runs the same function on CPU tensors (the oracle) and on their neuron copies and
asserts that no op fell back to the CPU.
"""

import pytest
import torch
from test_index_sort_ops import check_native, to_cpu, to_neuron

import vtrn

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.uint8]


def sample(shape, dtype, seed=0, zeros=0.5):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-4, 5, shape, generator=g)
    x[torch.rand(shape, generator=g) < zeros] = 0
    return x.abs().to(dtype) if dtype == torch.uint8 else x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (), (0,), (3, 0, 2)])
def test_nonzero(clean_tracking, dtype, shape):
    x = sample(shape, dtype)
    check_native(torch.nonzero, x)
    check_native(lambda t: torch.nonzero(t, as_tuple=True), x)
    check_native(torch.argwhere, x)
    out = torch.empty(0, dtype=torch.long)
    check_native(lambda t, o: torch.nonzero(t, out=o), x, out)


def test_nonzero_special_values(clean_tracking):
    x = torch.tensor([0.0, -0.0, float("nan"), float("inf"), 1e-45, 0.0])
    check_native(torch.nonzero, x)
    check_native(torch.nonzero, x.view(2, 3).t())  # non-contiguous: row-major order of the view


@pytest.mark.parametrize("size", [0, 1, 4, 20])
def test_nonzero_static(clean_tracking, size):
    x = sample((3, 4), torch.float32)
    check_native(lambda t: torch.nonzero_static(t, size=size, fill_value=-3), x)


def test_nonzero_out_dtype_error_matches_cpu():
    x = torch.tensor([1, 0, 2])
    with pytest.raises(RuntimeError) as cpu:
        torch.nonzero(x, out=torch.empty(0))
    with pytest.raises(RuntimeError) as dev:
        torch.nonzero(x.to("neuron"), out=torch.empty(0, device="neuron"))
    assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool])
@pytest.mark.parametrize(
    "xs,ms", [((4, 5), (4, 5)), ((4, 5), (5,)), ((5,), (4, 5)), ((), ()), ((0, 3), (3,))]
)
def test_masked_select(clean_tracking, dtype, xs, ms):
    x = sample(xs, dtype, seed=1)
    mask = sample(ms, torch.int64, seed=2) != 0
    check_native(torch.masked_select, x, mask)
    out = torch.empty(0, dtype=dtype)
    check_native(lambda a, m, o: torch.masked_select(a, m, out=o), x, mask, out)


def test_masked_select_errors_match_cpu():
    x, m = torch.ones(3), torch.tensor([1, 0, 1])
    with pytest.raises(RuntimeError) as cpu:
        torch.masked_select(x, m)
    with pytest.raises(RuntimeError) as dev:
        torch.masked_select(x.to("neuron"), m.to("neuron"))
    assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_masked_select_and_boolean_index_backward(clean_tracking, dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 6, generator=g).to(dtype)
    mask = torch.rand(4, 6, generator=g) < 0.4
    row_mask = torch.tensor([True, False, True, True])
    grads = []
    for dev in ("cpu", "neuron"):
        xd = x.to(dev).detach().requires_grad_()
        m, rm = mask.to(dev), row_mask.to(dev)
        loss = (torch.masked_select(xd, m) * 2).sum() + (xd[m] ** 2).sum() + xd[rm][:, 1:].sum()
        loss.backward()
        grads.append((loss.detach().cpu(), xd.grad.cpu()))
    assert vtrn.get_fallback_ops() == []
    torch.testing.assert_close(grads[1], grads[0])


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool])
def test_boolean_index_and_index_put(clean_tracking, dtype):
    x = sample((4, 5, 3), dtype, seed=4)
    m2 = sample((4, 5), torch.int64, seed=5) != 0
    m1 = torch.tensor([True, False, True, False, True])

    check_native(lambda t, m: t[m], x, m2)
    check_native(lambda t, m: t[:, m], x, m1)
    check_native(lambda t, m: t[m, 1:], x, m2)

    def put(t, m):
        t = t.clone()
        n = int(m.sum())
        t[m] = torch.arange(n * 3).view(n, 3).to(t.dtype).to(t.device)
        return t

    check_native(put, x, m2)

    def put_scalar(t, m):
        t = t.clone()
        t[m] = 1
        return t

    check_native(put_scalar, x, m2)

    def accumulate(t, m):
        n = int(m.sum())
        v = torch.ones(n, 3, dtype=t.dtype, device=t.device)
        return t.index_put((m,), v, accumulate=True)

    if dtype != torch.bool:
        check_native(accumulate, x, m2)


def test_boolean_index_shape_error_matches_cpu():
    x, m = torch.ones(3, 4), torch.tensor([True, False])
    with pytest.raises(IndexError) as cpu:
        x[m]
    with pytest.raises(IndexError) as dev:
        x.to("neuron")[m.to("neuron")]
    assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool])
@pytest.mark.parametrize("ms", [(4, 5), (5,), ()])
def test_masked_scatter(clean_tracking, dtype, ms):
    x = sample((4, 5), dtype, seed=6)
    mask = sample(ms, torch.int64, seed=7) != 0
    src = sample((30,), dtype, seed=8, zeros=0)
    check_native(torch.masked_scatter, x, mask, src)
    check_native(lambda t, m, s: t.clone().masked_scatter_(m, s), x, mask, src)
    check_native(
        lambda t, m, s: torch.masked_scatter(t[:0], m[:0] if m.dim() == 2 else m, s), x, mask, src
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_masked_scatter_backward(clean_tracking, dtype):
    g = torch.Generator().manual_seed(9)
    x, src = torch.randn(3, 4, generator=g).to(dtype), torch.randn(12, generator=g).to(dtype)
    mask = torch.rand(3, 4, generator=g) < 0.5
    grads = []
    for dev in ("cpu", "neuron"):
        xd, sd = x.to(dev).detach().requires_grad_(), src.to(dev).detach().requires_grad_()
        (torch.masked_scatter(xd, mask.to(dev), sd) ** 2).sum().backward()
        grads.append((xd.grad.cpu(), sd.grad.cpu()))
    assert vtrn.get_fallback_ops() == []
    torch.testing.assert_close(grads[1], grads[0])


REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32,
        torch.bfloat16,
        torch.float16,
        torch.int64,
        torch.int32,
        torch.int8,
        torch.uint8,
    ],
)
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(clean_tracking, dtype, reduce, include_self):
    g = torch.Generator().manual_seed(10)
    x = torch.randint(-3, 4, (6, 5), generator=g)
    src = torch.randint(-3, 4, (4, 5), generator=g)
    if dtype == torch.uint8:
        x, src = x.abs(), src.abs()
    x, src = x.to(dtype), src.to(dtype)
    index = torch.randint(0, 6, (4, 5), generator=g)
    for dim, idx in ((0, index), (1, index.t().contiguous()[:, :4] % 5)):
        s = src if dim == 0 else src.t().contiguous()[:, :4]

        def fn(t, i, u, dim=dim):
            return t.scatter_reduce(dim, i, u, reduce, include_self=include_self)

        check_native(fn, x, idx, s, exact=dtype not in (torch.bfloat16, torch.float16))
        check_native(
            lambda t, i, u, dim=dim: t.clone().scatter_reduce_(
                dim, i, u, reduce, include_self=include_self
            ),
            x,
            idx,
            s,
            exact=dtype not in (torch.bfloat16, torch.float16),
        )
    check_native(fn, x, index[:0], src[:0])


def test_scatter_reduce_extremes_and_nan(clean_tracking):
    x = torch.tensor([0.0, 5.0, float("nan"), 1.0])
    src = torch.tensor([float("nan"), 2.0, 3.0, -1.0, float("inf")])
    idx = torch.tensor([0, 1, 1, 3, 3])
    for reduce in ("amax", "amin", "prod", "sum"):
        for inc in (True, False):
            check_native(
                lambda t, i, s: t.scatter_reduce(0, i, s, reduce, include_self=inc), x, idx, src
            )
    big = torch.tensor([0, 0], dtype=torch.int64)
    vals = torch.tensor([2**62 + 1, -(2**62) - 3], dtype=torch.int64)
    for reduce in ("amax", "amin"):
        check_native(
            lambda t, i, s: t.scatter_reduce(0, i, s, reduce, include_self=False),
            big,
            torch.tensor([0, 1]),
            vals,
        )


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_backward(clean_tracking, reduce):
    g = torch.Generator().manual_seed(11)
    x, src = torch.randn(5, 3, generator=g), torch.randn(6, 3, generator=g)
    index = torch.randint(0, 5, (6, 3), generator=g)
    grads = []
    for dev in ("cpu", "neuron"):
        xd, sd = x.to(dev).detach().requires_grad_(), src.to(dev).detach().requires_grad_()
        y = xd.scatter_reduce(0, index.to(dev), sd, reduce, include_self=True)
        (y * torch.arange(15.0, device=dev).view(5, 3)).sum().backward()
        grads.append((y.detach().cpu(), xd.grad.cpu(), sd.grad.cpu()))
    torch.testing.assert_close(grads[1], grads[0])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
@pytest.mark.parametrize("minlength", [0, 3, 12])
def test_bincount(clean_tracking, dtype, minlength):
    x = torch.tensor([1, 4, 4, 0, 7, 1, 1], dtype=dtype)
    w = torch.linspace(-1, 2, 7)
    check_native(lambda t: torch.bincount(t, minlength=minlength), x)
    check_native(lambda t, ww: torch.bincount(t, ww, minlength=minlength), x, w)
    check_native(lambda t: torch.bincount(t, minlength=minlength), x[:0])


def test_bincount_errors_match_cpu():
    for x in (torch.tensor([1, -1]), torch.tensor([[1]])):
        with pytest.raises(RuntimeError) as cpu:
            torch.bincount(x)
        with pytest.raises(RuntimeError) as dev:
            torch.bincount(x.to("neuron"))
        assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices])
@pytest.mark.parametrize("args", [(4, 4), (3, 6, 1), (6, 3, -2), (0, 5), (5, 0, 3)])
def test_tril_triu_indices(clean_tracking, fn, args):
    expected = fn(*args)
    vtrn.clear_op_tracking()
    got = fn(*args, device="neuron")
    assert got.device.type == "neuron"
    assert vtrn.get_fallback_ops() == []
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)
    torch.testing.assert_close(
        fn(*args, dtype=torch.int32, device="neuron").cpu(),
        fn(*args, dtype=torch.int32),
        rtol=0,
        atol=0,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_unsorted_selects_the_cpus_elements(clean_tracking, dtype, largest):
    """sorted=False promises no order: the CPU returns its selection algorithm's order. The
    device must return the same elements (values and, with distinct values, indices)."""
    g = torch.Generator().manual_seed(12)
    x = torch.randperm(60, generator=g).view(3, 20).to(dtype)
    for k, dim in ((5, 1), (2, 0), (20, 1), (0, 1)):
        cv, ci = torch.topk(x, k, dim, largest=largest, sorted=False)
        vtrn.clear_op_tracking()
        dv, di = to_cpu(torch.topk(to_neuron(x), k, dim, largest=largest, sorted=False))
        assert vtrn.get_fallback_ops() == []
        torch.testing.assert_close(dv.sort(dim).values, cv.sort(dim).values, rtol=0, atol=0)
        torch.testing.assert_close(di.sort(dim).values, ci.sort(dim).values, rtol=0, atol=0)
        torch.testing.assert_close(x.gather(dim, di), dv, rtol=0, atol=0)
