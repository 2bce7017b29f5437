"""Factories, integer ops, scans, sorting and indexing run natively and give the CPU's results.

Each case runs the same function on CPU tensors (the oracle) and on their neuron copies,
including non-contiguous and zero-size inputs, and asserts that no op fell back to the CPU.
"""

import pytest
import torch

import vtrn


def to_neuron(x):
    if isinstance(x, torch.Tensor):
        return x.to("neuron")
    if isinstance(x, (list, tuple)):
        return type(x)(to_neuron(e) for e in x)
    return x


def to_cpu(x):
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(e) for e in x)
    return x


def check_native(fn, *args, exact=True):
    """fn(*args) on neuron equals fn(*args) on the CPU, with no fallback."""
    expected = fn(*args)
    vtrn.clear_op_tracking()
    got = to_cpu(fn(*to_neuron(args)))
    fallbacks = vtrn.get_fallback_ops()
    assert fallbacks == [], f"fell back: {fallbacks}"
    if exact:
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(got, expected, equal_nan=True)
    return got


def noncontig(shape, dtype=torch.float32, low=-5, high=5, gen=None):
    """A transposed (non-contiguous) tensor of |shape|."""
    t = torch.randint(low, high, (shape[1], shape[0], *shape[2:]), generator=gen)
    return t.to(dtype).transpose(0, 1)


# Factories ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,kwargs",
    [
        ((5,), {}),
        ((2, 9), {}),
        ((2, 9, 3), {}),
        ((10, -3, -2), {}),
        ((0,), {}),
        ((0.0, 1.0, 0.1), {}),
        ((-1.5, 2.5, 0.25), {"dtype": torch.float32}),
        ((7,), {"dtype": torch.float32}),
        ((7,), {"dtype": torch.bfloat16}),
        ((1, 7), {"dtype": torch.int32}),
        ((3, 3), {}),
    ],
)
def test_arange(clean_tracking, args, kwargs):
    expected = torch.arange(*args, **kwargs)
    vtrn.clear_op_tracking()
    got = torch.arange(*args, device="neuron", **kwargs)
    assert vtrn.get_fallback_ops() == []
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got.cpu(), expected)


def test_arange_out_resizes(clean_tracking):
    out = torch.empty(2, dtype=torch.int64, device="neuron")
    torch.arange(3, 8, out=out)
    assert vtrn.get_fallback_ops() == []
    assert torch.equal(out.cpu(), torch.arange(3, 8))


def test_arange_bad_step_raises_the_cpu_error():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 5, 0, device="neuron")


@pytest.mark.parametrize(
    "start,end,steps,dtype",
    [
        (0.0, 1.0, 5, None),
        (-3.0, 7.0, 11, None),
        (2.0, 2.0, 1, None),
        (0.0, 1.0, 0, None),
        (0, 10, 6, torch.int64),
        (-4, 4, 9, torch.int32),
    ],
)
def test_linspace(clean_tracking, start, end, steps, dtype):
    expected = torch.linspace(start, end, steps, dtype=dtype)
    vtrn.clear_op_tracking()
    got = torch.linspace(start, end, steps, dtype=dtype, device="neuron")
    assert vtrn.get_fallback_ops() == []
    torch.testing.assert_close(got.cpu(), expected)


@pytest.mark.parametrize("n,m", [(3, None), (2, 5), (0, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_eye(clean_tracking, n, m, dtype):
    args = (n,) if m is None else (n, m)
    expected = torch.eye(*args, dtype=dtype)
    vtrn.clear_op_tracking()
    got = torch.eye(*args, dtype=dtype, device="neuron")
    assert vtrn.get_fallback_ops() == []
    assert torch.equal(got.cpu(), expected)


def test_full_and_rope_frequencies(clean_tracking):
    # The rotary-embedding idiom: a scalar base to a tensor power.
    check_native(lambda: torch.full((2, 3), 1.5, device="neuron").cpu())
    check_native(
        lambda x: 10000 ** (-x / 8), torch.arange(0, 8, 2, dtype=torch.float32), exact=False
    )
    check_native(lambda x: 2**x, torch.arange(6))
    check_native(lambda x: 1.0**x, torch.tensor([float("nan"), 2.0]))
    check_native(lambda x: 3.0**x, torch.empty(0))


# Shape ops -------------------------------------------------------------------------------


def test_cat_and_stack_with_empty_inputs(clean_tracking):
    x = torch.randn(2, 3)
    check_native(lambda a, b: torch.cat([a, b]), torch.empty(0), x)
    check_native(lambda a, b: torch.cat([a, b], dim=1), torch.empty(2, 0), x)
    check_native(lambda a, b: torch.cat([a, b]), torch.empty(0), torch.empty(0))
    check_native(lambda a, b: torch.stack([a, b]), torch.empty(0, 3), torch.empty(0, 3))
    check_native(lambda a, b: torch.stack([a, b], dim=1), x, x.t().t())


@pytest.mark.parametrize(
    "src,out",
    [
        (torch.bfloat16, torch.float32),  # FSDP2's reduce-scatter input of bfloat16 gradients
        (torch.float32, torch.bfloat16),  # rounded to the output dtype
        (torch.int32, torch.float32),
    ],
)
def test_cat_into_an_out_of_another_dtype(clean_tracking, src, out):
    g = torch.Generator().manual_seed(3)
    parts = [torch.randn(s, 4, generator=g).mul(100).to(src) for s in (2, 5)]

    def cat(a, b):
        return torch.cat([a, b], dim=0, out=torch.empty(0, dtype=out, device=a.device))

    got = check_native(cat, *parts)
    assert got.dtype == out


def test_cat_into_an_out_it_cannot_be_cast_to_raises_the_cpus_error():
    a = torch.randn(2, 3)
    with pytest.raises(TypeError) as expected:
        torch.cat([a, a], out=torch.empty(0, dtype=torch.int64))
    with pytest.raises(TypeError) as got:
        torch.cat([a.to("neuron")] * 2, out=torch.empty(0, dtype=torch.int64, device="neuron"))
    assert str(got.value) == str(expected.value)


def test_where_and_masked_forms(clean_tracking):
    x = noncontig((4, 3))
    mask = x > 0
    check_native(lambda c, a: torch.where(c, a, 0.0), mask, x)
    check_native(lambda c, a: torch.where(c, 1.0, a), mask, x)
    check_native(lambda c, a: torch.where(c, a, -a), mask, x)
    check_native(lambda a, m: a.masked_fill(m, -1.0), x, mask)
    check_native(lambda a, m: a.masked_fill(m, torch.tensor(2.0)), x, mask)


# Integer and bool ops --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_bitwise(clean_tracking, dtype):
    low = 0 if dtype in (torch.uint8, torch.bool) else -8
    high = 2 if dtype == torch.bool else 9
    a = noncontig((4, 5), dtype, low, high)
    b = noncontig((4, 5), dtype, low, high)
    check_native(torch.bitwise_and, a, b)
    check_native(torch.bitwise_or, a, b)
    check_native(torch.bitwise_xor, a, b)
    check_native(torch.bitwise_not, a)
    check_native(lambda x, y: x & y, a, b[:1])
    check_native(torch.bitwise_and, a[:0], b[:0])


def test_bool_mul(clean_tracking):
    a = torch.tensor([True, False, True, False])
    b = torch.tensor([True, True, False, False])
    check_native(torch.mul, a, b)
    check_native(lambda x, y: x * y, a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32])
def test_floor_divide_and_remainder(clean_tracking, dtype):
    a = torch.tensor([[7, -7, 7, -7, 0, 5], [3, -3, 9, 1, -1, 8]], dtype=dtype)
    b = torch.tensor([[2, 2, -2, -2, 3, 5], [4, 4, -5, 7, 7, -3]], dtype=dtype)
    check_native(torch.floor_divide, a, b)
    check_native(torch.remainder, a, b)
    check_native(lambda x: x // 3, a)
    check_native(lambda x: x % 3, a)
    check_native(lambda x: torch.remainder(5, x), b)
    check_native(torch.remainder, a.t(), b.t())
    if dtype.is_floating_point:
        x = torch.tensor([0.5, -0.5, 1e-3, 2.5, float("inf"), 1.0])
        y = torch.tensor([0.0, 0.3, -0.7, float("inf"), 2.0, float("nan")])
        check_native(torch.floor_divide, x.to(dtype), y.to(dtype))
        check_native(torch.remainder, x.to(dtype), y.to(dtype))


# Scans and arg reductions ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32])
def test_argmax_argmin_max_min(clean_tracking, dtype):
    x = noncontig((5, 4), dtype, -3, 3)  # ties: the first index wins
    for fn in (torch.argmax, torch.argmin):
        check_native(fn, x)
        check_native(lambda t, f=fn: f(t, dim=0), x)
        check_native(lambda t, f=fn: f(t, dim=1, keepdim=True), x)
    check_native(lambda t: torch.max(t, dim=1), x)
    check_native(lambda t: torch.min(t, dim=0, keepdim=True), x)
    check_native(torch.max, x)
    check_native(torch.min, x)
    check_native(lambda t: torch.max(t, dim=1), x[:0])


def test_arg_reductions_with_nan(clean_tracking):
    x = torch.tensor([[1.0, float("nan"), 3.0, float("nan")], [2.0, 5.0, 5.0, -1.0]])
    check_native(lambda t: torch.argmax(t, dim=1), x)
    check_native(lambda t: torch.argmin(t, dim=1), x)
    check_native(lambda t: torch.max(t, dim=1), x)
    check_native(torch.max, x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32, torch.bool])
def test_cumsum_cumprod(clean_tracking, dtype):
    high = 2 if dtype == torch.bool else 3
    low = 0 if dtype == torch.bool else -2
    x = noncontig((6, 5), dtype, low, high)
    check_native(lambda t: torch.cumsum(t, 0), x, exact=not dtype.is_floating_point)
    check_native(lambda t: torch.cumsum(t, 1), x, exact=not dtype.is_floating_point)
    check_native(lambda t: torch.cumprod(t, 1), x, exact=not dtype.is_floating_point)
    check_native(lambda t: torch.cumsum(t, 0, dtype=torch.float32), x, exact=False)
    check_native(lambda t: torch.cumsum(t, 0), x[:0])


def test_cumsum_backward(clean_tracking):
    x = torch.randn(4, 7)
    xn = x.to("neuron").requires_grad_()
    x.requires_grad_()
    torch.cumsum(x, 1).pow(2).sum().backward()
    vtrn.clear_op_tracking()
    torch.cumsum(xn, 1).pow(2).sum().backward()
    assert "aten::cumsum" not in " ".join(vtrn.get_fallback_ops())
    torch.testing.assert_close(xn.grad.cpu(), x.grad)


def test_isin(clean_tracking):
    x = noncontig((4, 6), torch.int64, 0, 10)
    t = torch.tensor([2, 5, 7])
    check_native(torch.isin, x, t)
    check_native(lambda a, b: torch.isin(a, b, invert=True), x, t)
    check_native(lambda a: torch.isin(a, 5), x)
    check_native(torch.isin, x[:0], t)


# Sorting -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32, torch.int8])
def test_sort_argsort_topk(clean_tracking, dtype):
    x = noncontig((6, 5), dtype, -4, 4)  # ties: stable=True fixes their order
    y = (torch.randperm(30) - 15).reshape(5, 6).to(dtype)  # distinct: any sort agrees
    for descending in (False, True):
        check_native(lambda t, d=descending: torch.sort(t, dim=1, descending=d), y.t())
        check_native(lambda t, d=descending: torch.sort(t, dim=0, descending=d, stable=True), x)
        check_native(lambda t, d=descending: torch.argsort(t, dim=1, descending=d, stable=True), x)
    check_native(lambda t: torch.topk(t, 3, dim=1), y.t().contiguous().t())
    check_native(lambda t: torch.topk(t, 2, dim=0, largest=False), y)
    check_native(lambda t: torch.sort(t), x[:0])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.bool])
@pytest.mark.parametrize("n", [17, 128, 5000, 40000])
def test_an_unstable_sort_orders_ties_as_the_cpus(clean_tracking, dtype, n):
    """Many equal keys (an MoE's expert ids): the CPU's sort is std::sort, whose order among
    them the indices show (before: 0-2% of Mixtral's routing indices matched), except a 1-D
    ascending integer sort of 32768 elements or more, which is a stable radix sort."""
    g = torch.Generator().manual_seed(n)
    x = torch.randint(0, 2 if dtype == torch.bool else max(2, n // 10), (n,), generator=g).to(dtype)
    for descending in (False, True):
        check_native(lambda t, d=descending: torch.sort(t, descending=d), x)
        check_native(lambda t, d=descending: torch.argsort(t, descending=d), x)
        check_native(lambda t, d=descending: torch.sort(t, stable=False, descending=d), x)
    if n <= 5000:  # along either dim of a matrix, line by line
        m = x[: n - n % 4].reshape(4, -1)
        check_native(lambda t: torch.sort(t, dim=1), m)
        check_native(lambda t: torch.sort(t, dim=0, descending=True), m.t().contiguous())


def test_an_unstable_sort_of_an_expanded_line_keeps_the_order(clean_tracking):
    """The CPU's sort returns the indices in order along a stride-0 dim without sorting (its
    std::sort would move the equal keys, as it does for the same keys laid out densely): such a
    call runs the CPU's kernel."""
    row = torch.randn(1, 40)
    views = (
        (lambda d: torch.zeros(1, device=d).expand(100), 0),
        (lambda d: row.to(d).expand(8, 40), 0),
        (lambda d: row.to(d).t().expand(40, 8), 1),
    )
    for make, dim in views:
        want, got = torch.sort(make("cpu"), dim=dim), torch.sort(make("neuron"), dim=dim)
        assert torch.equal(got.values.cpu(), want.values)
        assert torch.equal(got.indices.cpu(), want.indices)


def test_sort_with_nan_matches_the_cpu(clean_tracking):
    x = torch.tensor([3.0, float("nan"), -1.0, float("nan"), 2.0])
    check_native(lambda t: torch.sort(t), x)
    check_native(lambda t: torch.sort(t, descending=True), x)
    check_native(lambda t: torch.topk(t, 2), x)


def test_topk_backward(clean_tracking):
    x = torch.randn(4, 8)
    xn = x.to("neuron").requires_grad_()
    x.requires_grad_()
    torch.topk(x, 3, dim=1).values.sum().backward()
    torch.topk(xn, 3, dim=1).values.sum().backward()
    torch.testing.assert_close(xn.grad.cpu(), x.grad)


# Indexing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_gather_scatter(clean_tracking, dtype):
    g = torch.Generator().manual_seed(0)
    x = noncontig((4, 5), dtype, 0, 2 if dtype == torch.bool else 9, g)
    idx = torch.randint(0, 4, (3, 5), generator=g)
    check_native(lambda t, i: torch.gather(t, 0, i), x, idx)
    check_native(lambda t, i: torch.gather(t, 1, i), x, torch.randint(0, 5, (4, 2), generator=g))
    check_native(lambda t, i: torch.gather(t, 0, i), x, idx[:0])
    src = noncontig((4, 5), dtype, 0, 2 if dtype == torch.bool else 9, g)
    # Unique indices per column: scatter's result does not depend on the write order.
    perm = torch.stack([torch.randperm(4, generator=g)[:3] for _ in range(5)], dim=1)
    check_native(lambda t, i, s: t.scatter(0, i, s), x, perm, src)
    check_native(lambda t, i: t.scatter(0, i, 7 if dtype != torch.bool else True), x, perm)
    if dtype != torch.bool:
        check_native(lambda t, i, s: t.scatter_add(0, i, s), x, idx, src)


def test_gather_and_index_of_a_complex_table(clean_tracking):
    """A complex64 rotary table read at positions, as torchtitan does per batch (gather with an
    expanded index) and for one sequence (indexing)."""
    g = torch.Generator().manual_seed(4)
    table = torch.polar(torch.ones(16, 4), torch.randn(16, 4, generator=g))
    positions = torch.randint(0, 16, (2, 6), generator=g)

    def per_batch(t, pos):
        expanded = t[None, :, None, :].expand(2, -1, -1, -1)
        index = pos.view(2, 6, 1, 1).expand(2, 6, 1, 4)
        return torch.gather(expanded, dim=1, index=index)

    check_native(per_batch, table, positions)
    check_native(lambda t, pos: torch.gather(t, -1, pos[:, :4] % 4), table, positions)
    check_native(lambda t, pos: t[pos[0]], table, positions)
    check_native(lambda t, pos: t[:, pos[1] % 4], table, positions)


def test_gather_backward_and_scatter_add(clean_tracking):
    x = torch.randn(4, 6)
    idx = torch.tensor([[0, 1, 1], [2, 2, 5], [0, 0, 0], [3, 4, 5]])
    xn = x.to("neuron").requires_grad_()
    x.requires_grad_()
    torch.gather(x, 1, idx).pow(2).sum().backward()
    vtrn.clear_op_tracking()
    torch.gather(xn, 1, idx.to("neuron")).pow(2).sum().backward()
    assert vtrn.get_fallback_ops() == []
    torch.testing.assert_close(xn.grad.cpu(), x.grad)


def test_index_add(clean_tracking):
    x = torch.randn(5, 3)
    src = torch.randn(4, 3)
    idx = torch.tensor([0, 2, 2, 4])
    check_native(lambda t, i, s: t.index_add(0, i, s), x, idx, src, exact=False)
    check_native(lambda t, i, s: t.index_add(1, i, s, alpha=2.0), x.t(), idx, src.t(), exact=False)
    check_native(lambda t, i, s: t.index_add(0, i, s), x, idx[:0], src[:0])


def test_advanced_indexing(clean_tracking):
    x = torch.arange(60.0).reshape(3, 4, 5)
    i = torch.tensor([0, 2, -1])
    j = torch.tensor([[1], [3]])
    check_native(lambda t, a: t[a], x, i)
    check_native(lambda t, a: t[:, a], x, torch.tensor([3, 0]))
    check_native(lambda t, a, b: t[a, b], x, i[:2], torch.tensor([1, 3]))
    check_native(lambda t, a, b: t[a, :, b], x, i, torch.tensor([0, 4, 2]))  # B first
    check_native(lambda t, a, b: t[:, a, b], x, j, torch.tensor([0, 4]))
    check_native(lambda t, a: t.transpose(0, 2)[a], x, i)
    check_native(lambda t, a: t[a], x, i[:0])


def test_index_put(clean_tracking):
    x = torch.zeros(4, 5)
    i = torch.tensor([0, 2, -1])
    check_native(lambda t, a, v: t.index_put((a,), v), x, i, torch.randn(3, 5))
    check_native(lambda t, a, v: t.index_put((a,), v), x, i, torch.tensor(3.0))
    dup = torch.tensor([1, 1, 3, 1])
    check_native(lambda t, a, v: t.index_put((a,), v, accumulate=True), x, dup, torch.ones(4, 5))
    check_native(
        lambda t, a, b, v: t.index_put((a, b), v, accumulate=True),
        x,
        dup,
        torch.tensor([0, 0, 4, 2]),
        torch.tensor([1.0, 2.0, 3.0, 4.0]),
    )

    def setitem(t, a, v):
        t = t.clone()
        t[:, a] = v
        return t

    check_native(setitem, x, torch.tensor([4, 0]), torch.randn(4, 2))

    def mask_fill(t, m):
        t = t.clone()
        t[m] = -2.0
        return t

    check_native(mask_fill, torch.randn(4, 5), torch.randn(4, 5) > 0)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_histc(clean_tracking, dtype):
    # Mixtral counts tokens per expert with histc on integer expert ids (CUDA accepts those;
    # the CPU kernel does not, so integers are checked against the float computation).
    x = torch.tensor([[0, 3, 1], [7, 3, 3], [2, 0, 9]], dtype=dtype)
    ref = dtype if dtype.is_floating_point else torch.float32
    for bins, lo, hi in ((8, 0, 7), (4, 0, 0), (5, 1, 3)):
        expected = torch.histc(x.to(ref), bins=bins, min=lo, max=hi).to(dtype)
        vtrn.clear_op_tracking()
        got = torch.histc(x.to("neuron"), bins=bins, min=lo, max=hi)
        # The data's range (min == max) of floating data runs on the CPU, which refuses inf
        # and nan there (test_histc_of_non_finite_data_raises_the_cpus_error).
        data_range = lo == hi and dtype.is_floating_point
        assert vtrn.get_fallback_ops() == (["aten::histc"] if data_range else [])
        assert got.dtype == dtype
        assert torch.equal(got.cpu(), expected)


@pytest.mark.parametrize(
    "values",
    [[float("inf")], [float("-inf"), float("inf")], [1.0, 2.0, float("inf")], [float("nan")]],
)
def test_histc_of_non_finite_data_raises_the_cpus_error(values):
    with pytest.raises(RuntimeError) as cpu:
        torch.histc(torch.tensor(values))
    with pytest.raises(RuntimeError) as dev:
        torch.histc(torch.tensor(values, device="neuron"))
    assert str(dev.value) == str(cpu.value)
    # With a range given, inf and nan are outside it and ignored, natively, as on the CPU.
    x = torch.tensor(values + [0.5])
    got = torch.histc(x.to("neuron"), bins=4, min=0, max=3)
    assert torch.equal(got.cpu(), torch.histc(x, bins=4, min=0, max=3))
