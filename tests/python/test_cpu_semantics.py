"""What the CPU refuses, `neuron` refuses; what the CPU types one way, `neuron` types the same way.

Each case runs on the CPU (the reference) and on `neuron`, and compares the outcome: the
result's dtype, shape and values, or the exception's type and message. Devices follow CUDA's
rule (PyTorch's own error for tensors on two devices, 0-d CPU tensors allowed as scalars).
float64 is computed as float32 on `neuron` (test_dtypes.py): its cases compare dtypes and
errors, and values at float32 precision.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextlib import nullcontext

import pytest
import torch
from cpu_reference import check, mixed_mismatches, outcome

HERE = os.path.dirname(os.path.abspath(__file__))
SAME_DEVICE = (
    "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
)


# --- devices --------------------------------------------------------------------------------


def n(i=0):
    return f"neuron:{i}"


TWO_DEVICE_CALLS = {
    "add (lowered)": lambda a, b: a + b,
    "mul_ (lowered, in place)": lambda a, b: a.mul_(b),
    "mm (lowered)": lambda a, b: a.view(2, 2) @ b.view(2, 2),
    "atan2 (CPU fallback)": lambda a, b: torch.atan2(a, b),
    "add float64 (fallback, as float32)": lambda a, b: a.double() + b.double(),
    "cat": lambda a, b: torch.cat([a, b]),
    "where": lambda a, b: torch.where(a > 0, a, b),
    "lerp": lambda a, b: torch.lerp(a, b, 0.5),
    "foreach add.List": lambda a, b: torch._foreach_add([a], [b]),
    "foreach addcmul": lambda a, b: torch._foreach_addcmul([a], [a], [b]),
}


@pytest.mark.parametrize("call", TWO_DEVICE_CALLS.values(), ids=TWO_DEVICE_CALLS.keys())
def test_tensors_on_two_devices_raise_pytorchs_error(call):
    a = torch.ones(4, device=n(0))
    b = torch.ones(4, device=n(1))
    with pytest.raises(RuntimeError, match=re.escape(SAME_DEVICE.format(n(0), n(1)))):
        call(a, b)


@pytest.mark.parametrize("call", TWO_DEVICE_CALLS.values(), ids=TWO_DEVICE_CALLS.keys())
def test_a_non_scalar_cpu_tensor_raises(call):
    a = torch.ones(4, device=n(0))
    with pytest.raises(RuntimeError, match=re.escape(SAME_DEVICE.format(n(0), "cpu"))):
        call(a, torch.ones(4))


def test_a_zero_dim_cpu_tensor_is_a_scalar():
    a = torch.arange(4.0)
    s = torch.tensor(2.5)
    for fn in (lambda x: x + s, lambda x: x.mul(s), lambda x: torch.atan2(x, s)):
        assert torch.equal(fn(a.to(n(0))).cpu(), fn(a))
    # ... but not as an output.
    with pytest.raises(RuntimeError, match=re.escape(SAME_DEVICE.format(n(0), "cpu"))):
        torch.add(a.to(n(0)), 1, out=torch.empty(()))


@pytest.mark.parametrize(
    "call",
    [
        lambda a, out: torch.add(a, 1, out=out),
        lambda a, out: torch.sin(a, out=out),
        lambda a, out: torch.sum(a, 0, out=out[0]),
        lambda a, out: torch.atan(a, out=out),
    ],
    ids=["add.out", "sin.out", "sum.out", "atan.out (fallback)"],
)
def test_an_out_tensor_on_another_device_raises(call):
    # TensorIterator names the output's device first: it takes the common device from it.
    with pytest.raises(RuntimeError, match=re.escape(SAME_DEVICE.format(n(1), n(0)))):
        call(torch.ones(4, device=n(0)), torch.empty(4, device=n(1)))


def test_copies_and_indexing_may_cross_devices():
    x = torch.arange(6.0)
    a, b = x.to(n(0)), torch.zeros(6, device=n(1))
    b.copy_(a)
    assert torch.equal(b.cpu(), x) and b.device == torch.device(n(1))
    assert torch.equal(a.to(n(1)).cpu(), x)
    c = torch.zeros(6, device=n(0))
    c.copy_(x)
    assert torch.equal(c.cpu(), x)
    idx = torch.tensor([4, 1])
    assert torch.equal(a[idx].cpu(), x[idx])
    a[idx] = torch.tensor(-1.0)
    x[idx] = -1.0
    assert torch.equal(a.cpu(), x)


def test_foreach_lists_may_span_devices_as_on_cuda():
    # CUDA runs a list that spans devices index by index: each index's tensors on one device.
    xs = [torch.arange(3.0), torch.arange(3.0) + 10]
    on = [xs[0].to(n(0)), xs[1].to(n(1))]
    out = torch._foreach_add(on, 1)
    assert [t.device for t in out] == [torch.device(n(0)), torch.device(n(1))]
    assert all(torch.equal(o.cpu(), x + 1) for o, x in zip(out, xs))
    torch._foreach_mul_(on, [t.clone() for t in on])
    assert all(torch.equal(o.cpu(), x * x) for o, x in zip(on, xs))
    norms = torch._foreach_norm(on)
    assert all(torch.equal(nm.cpu(), torch.linalg.vector_norm(x * x)) for nm, x in zip(norms, xs))
    # Index 0 mixes neuron:0 with a CPU tensor.
    with pytest.raises(RuntimeError, match=re.escape(SAME_DEVICE.format(n(0), "cpu"))):
        torch._foreach_add(on, [torch.ones(3), torch.ones(3)])


# --- memory overlap and bool subtraction -----------------------------------------------------

OVERLAP_CASES = {
    "x[1:] += x[:-1]": lambda x: x[1:].add_(x[:-1]),
    "add out= overlaps its input": lambda x: torch.add(x[:-1], 1, out=x[1:]),
    "sin out= overlaps its input": lambda x: torch.sin(x[:-1], out=x[1:]),
    "atan out= overlaps (fallback)": lambda x: torch.atan(x[:-1], out=x[1:]),
    "copy_ from the transpose": lambda x: x.view(2, 3)[:, :2].copy_(x.view(3, 2)[:2].t()),
    "square copy_ of its transpose": lambda x: x[:4].view(2, 2).copy_(x[:4].view(2, 2).t()),
    "add_ into an expanded tensor": lambda x: x[:1].expand(3).add_(1),
    "foreach add_ over an overlap": lambda x: torch._foreach_add_([x[1:]], [x[:-1]]),
    "cat out= is an input": lambda x: torch.cat([x[:2], x[2:4]], out=x[:4]),
    "masked_fill_ of an expanded tensor": lambda x: (
        x[:1].expand(3).masked_fill_(torch.tensor([True, False, True], device=x.device), 2)
    ),
    "the same view passed as out=": lambda x: torch.mul(x.view(2, 3), 2, out=x.view(2, 3)),
    # Not dense, so TensorIterator cannot compare them and accepts the call: the CPU's loop reads
    # elements 1 and 4 after it wrote them.
    "x.mT[1:] += x.mT[:-1] (not dense)": lambda x: x.view(2, 3).mT[1:].add_(x.view(2, 3).mT[:-1]),
    "mul_ between interleaved columns": lambda x: x.view(3, 2)[:, 1].mul_(x.view(3, 2)[:, 0]),
    # Strides (1, 2, 2): indices (0, 1, 0) and (0, 0, 1) name one element, visited twice.
    "lerp_ of a self-overlapping view": lambda x: x.as_strided((2, 2, 2), (1, 2, 2)).lerp_(
        torch.ones(2, dtype=x.dtype, device=x.device), 0.25
    ),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.float64])
@pytest.mark.parametrize("case", OVERLAP_CASES.values(), ids=OVERLAP_CASES.keys())
def test_overlapping_writes_follow_the_cpu(case, dtype):
    def fn(device):
        x = torch.arange(6, device=device).to(dtype)
        case(x)
        return x

    check(fn)


# --- values at the edges of the float range --------------------------------------------------

EDGES = [-float("inf"), -4.0, -0.0, 0.0, 4.0, float("inf"), float("nan")]
EDGE_CASES = {
    # clamp_min(x, 0): -0.0 and NaN pass through; 1/x shows the sign of a zero.
    "1 / relu(x)": lambda x: 1 / torch.relu(x),
    "1 / relu_(x)": lambda x: 1 / x.relu_(),
    # float16 takes std::pow for +-0.5 (pow(-inf, 0.5) is inf); the others take sqrt.
    "1 / pow(x, 0.5)": lambda x: 1 / x.pow(0.5),
    "1 / pow(x, -0.5)": lambda x: 1 / x.pow(-0.5),
    "pow_(x, 0.5)": lambda x: x.pow_(0.5),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", EDGE_CASES.values(), ids=EDGE_CASES.keys())
def test_values_at_the_edges_match_the_cpu(case, dtype):
    check(lambda d: case(torch.tensor(EDGES, dtype=dtype, device=d)))


NORM_OF_ONE_ELEMENT = {
    "[2e20]": lambda d, o: torch.linalg.vector_norm(torch.tensor([2e20], device=d), ord=o),
    "[[2e20], [1e20]] over dim 1": lambda d, o: torch.linalg.vector_norm(
        torch.tensor([[2e20], [1e20]], device=d), ord=o, dim=1
    ),
    "0-d 3e-30": lambda d, o: torch.linalg.vector_norm(torch.tensor(-3e-30, device=d), ord=o),
    "[2e20, 1e20] overflows": lambda d, o: torch.linalg.vector_norm(
        torch.tensor([2e20, 1e20], device=d), ord=o
    ),
    "bfloat16 [-2e20]": lambda d, o: torch.linalg.vector_norm(
        torch.tensor([-2e20], dtype=torch.bfloat16, device=d), ord=o
    ),
}


@pytest.mark.parametrize("ord", [2, 3, 1, 0.5, float("inf"), 0])
@pytest.mark.parametrize("case", NORM_OF_ONE_ELEMENT.values(), ids=NORM_OF_ONE_ELEMENT.keys())
def test_a_norm_of_one_element_per_output_is_its_absolute_value(case, ord):
    check(lambda d: case(d, ord))


@pytest.mark.parametrize("op", [torch.logical_and, torch.logical_or])
@pytest.mark.parametrize(
    "partner",
    [(torch.bfloat16, 1e-30), (torch.float32, 1e-10), (torch.float32, 3.0)],
    ids=["bfloat16 1e-30", "float32 1e-10", "float32 3"],
)
def test_logical_ops_cast_a_0d_operand_to_the_common_dtype_first(op, partner):
    # float16 is the common dtype: 1e-30 and 1e-10 become 0 there, so they are false.
    dtype, value = partner

    def fn(d):
        x = torch.tensor([0.0, 1.0, -2.0, float("nan")], dtype=torch.float16, device=d)
        return op(x, torch.tensor(value, dtype=dtype, device=d)), op(
            torch.tensor(value, dtype=dtype, device=d), x
        )

    check(fn)


BOOL_SUB = {
    "float - bool": lambda d: torch.ones(3, device=d) - torch.ones(3, device=d, dtype=torch.bool),
    "bool - float": lambda d: torch.ones(3, device=d, dtype=torch.bool) - torch.ones(3, device=d),
    "bool - bool": lambda d: (
        torch.ones(3, device=d, dtype=torch.bool) - torch.ones(3, device=d, dtype=torch.bool)
    ),
    "bool - 1": lambda d: torch.ones(3, device=d, dtype=torch.bool) - 1,
    "float - True": lambda d: torch.ones(3, device=d) - True,
    "sub_ of a bool": lambda d: torch.ones(3, device=d).sub_(
        torch.ones(3, device=d, dtype=torch.bool)
    ),
    "-bool": lambda d: -torch.ones(3, device=d, dtype=torch.bool),
    "int add with float alpha": lambda d: torch.add(
        torch.ones(3, device=d, dtype=torch.int64), 1, alpha=0.5
    ),
    "float add with bool alpha": lambda d: torch.add(torch.ones(3, device=d), 1, alpha=True),
}


@pytest.mark.parametrize("case", BOOL_SUB.values(), ids=BOOL_SUB.keys())
def test_bool_subtraction_and_alpha_raise_the_cpus_errors(case):
    check(case)


# --- promotion, then computation --------------------------------------------------------------


@pytest.mark.parametrize("chain", [False, True], ids=["alone", "then x*1"])
def test_mixed_dtype_ops_promote_then_compute_as_the_cpu(chain):
    # torch.pow(bfloat16 -1, int64 257) is +1 on the CPU: 257 becomes 256 in bfloat16 first.
    one = torch.pow(
        torch.tensor(-1.0, dtype=torch.bfloat16, device=n()), torch.tensor(257, device=n())
    )
    assert one.dtype == torch.bfloat16 and one.item() == 1.0
    bad = mixed_mismatches(chain)
    assert not bad, "\n".join(f"{k}:\n{v}" for k, v in bad.items())


def test_mixed_dtype_ops_promote_then_compute_as_the_cpu_under_aee():
    """The same cases with Adaptive Eager Execution on (read at startup: its own process),
    alone and fused with a following op."""
    script = f"""
import json, sys, torch, vtrn
sys.path.insert(0, {HERE!r})
import cpu_reference as t
vtrn.reset_metrics()
bad = {{**t.mixed_mismatches(), **{{k + " then x*1": v for k, v in t.mixed_mismatches(True).items()}}}}
print(json.dumps({{"bad": bad, "fused_groups": vtrn.metrics()["fused_groups"]}}))
"""
    env = dict(os.environ, TORCH_NEURONX_ENABLE_CONCATENATION="1")
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["fused_groups"] > 100  # the chained cases ran fused
    bad = result["bad"]
    assert not bad, "\n".join(f"{k}:\n{v}" for k, v in bad.items())


# --- the default dtype, complex, out= and in-place dtypes -------------------------------------


@pytest.fixture
def default_float64():
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


def _t(values, dtype, d):
    return torch.tensor(values, dtype=dtype, device=d)


DEFAULT_DTYPE_CASES = {
    "uint8 + 5.5": lambda d: _t([1, 200], torch.uint8, d) + 5.5,
    "int64 + 2.5 (in a 0-d)": lambda d: _t(3, torch.int64, d) + 2.5,
    "int / int": lambda d: _t([1, 7], torch.int64, d) / _t([3, 2], torch.int64, d),
    "int.div_ into float": lambda d: _t([1.0, 7.0], torch.float32, d).div_(
        _t([3, 2], torch.int64, d)
    ),
    "sqrt(int)": lambda d: torch.sqrt(_t([2, 9], torch.int64, d)),
    "exp(bool)": lambda d: torch.exp(_t([True, False], torch.bool, d)),
    "float32 + 1.5 stays float32": lambda d: _t([1.0], torch.float32, d) + 1.5,
    "bfloat16 * 0.1 stays bfloat16": lambda d: _t([3.0], torch.bfloat16, d) * 0.1,
    "int + int stays int64": lambda d: _t([1], torch.int64, d) + 2,
    "sum(int) is int64": lambda d: _t([1, 2], torch.int32, d).sum(),
    "mean(int) raises": lambda d: _t([1, 2], torch.int64, d).mean(),
    "a factory": lambda d: torch.ones(2, device=d),
    "arange of floats": lambda d: torch.arange(0.0, 1.0, 0.25, device=d),
    "full of a float": lambda d: torch.full((2,), 0.1, device=d),
    "int tensor * 0.1 (foreach)": lambda d: torch._foreach_mul([_t([3], torch.int64, d)], 0.1),
}


@pytest.mark.parametrize("default", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", DEFAULT_DTYPE_CASES.values(), ids=DEFAULT_DTYPE_CASES.keys())
def test_python_floats_and_true_division_take_the_default_dtype(case, default):
    torch.set_default_dtype(default)
    try:
        check(case, float32_precision=True)
    finally:
        torch.set_default_dtype(torch.float32)


def test_the_default_dtype_is_part_of_the_signature(default_float64):
    # One call signature, three default dtypes: each call is typed by the current one.
    x = torch.tensor([1, 2], dtype=torch.uint8, device=n())
    assert (x + 0.5).dtype == torch.float64
    torch.set_default_dtype(torch.float32)
    assert (x + 0.5).dtype == torch.float32
    torch.set_default_dtype(torch.bfloat16)
    assert (x + 0.5).dtype == torch.bfloat16
    torch.set_default_dtype(torch.float64)
    assert (x + 0.5).dtype == torch.float64


COMPLEX_AND_FLOAT64 = {
    "float64 + 1j": lambda d: _t([1.0, 2.0], torch.float64, d) + 1j,
    "float32 + 1j": lambda d: _t([1.0, 2.0], torch.float32, d) + 1j,
    "complex128 * 2": lambda d: _t([1 + 2j], torch.complex128, d) * 2,
    "complex64 * float64 0-d": lambda d: (
        _t([1 + 2j], torch.complex64, d) * _t(3.0, torch.float64, d)
    ),
    "float32 + float64 0-d": lambda d: _t([1.0, 2.0], torch.float32, d) + _t(0.1, torch.float64, d),
    "int + float64 0-d": lambda d: _t([1, 2], torch.int64, d) + _t(0.1, torch.float64, d),
    "float64 + float16": lambda d: _t([1.0], torch.float64, d) + _t([0.1], torch.float16, d),
    "sum(float64, dtype=float32)": lambda d: _t([1.0, 2.0], torch.float64, d).sum(
        dtype=torch.float32
    ),
    "sum(float32, dtype=float64)": lambda d: _t([1.0, 0.1], torch.float32, d).sum(
        dtype=torch.float64
    ),
    "where(float64 0-d, float32)": lambda d: torch.where(
        _t([True, False], torch.bool, d),
        _t(0.1, torch.float64, d),
        _t([1.0, 2.0], torch.float32, d),
    ),
    "float64.to(float32)": lambda d: _t([0.1], torch.float64, d).float(),
    "float64 arange": lambda d: torch.arange(0.0, 3.0, device=d, dtype=torch.float64),
    "float64 argmax": lambda d: _t([0.1, 3.0, 2.0], torch.float64, d).argmax(),
    "float64 > float64": lambda d: (
        _t([0.1, 3.0], torch.float64, d) > _t([0.2, 1.0], torch.float64, d)
    ),
    "lerp(float64, float32)": lambda d: torch.lerp(
        _t([1.0], torch.float64, d), _t([2.0], torch.float32, d), 0.5
    ),
    "lerp(float32, float32, float64 weight)": lambda d: torch.lerp(
        _t([1.0], torch.float32, d), _t([2.0], torch.float32, d), _t([0.5], torch.float64, d)
    ),
    "float64 x[1:] += x[:-1]": lambda d: _t([1.0, 2.0, 3.0], torch.float64, d)[1:].add_(
        _t([1.0, 2.0, 3.0], torch.float64, d)[:-1]
    ),
    "add(float64, out=float32)": lambda d: torch.add(
        _t([1.0], torch.float64, d), 1, out=torch.empty(1, device=d)
    ),
}


@pytest.mark.parametrize("case", COMPLEX_AND_FLOAT64.values(), ids=COMPLEX_AND_FLOAT64.keys())
def test_float64_and_complex128_results_have_the_cpus_dtype(case):
    check(case, float32_precision=True)


OUT_AND_IN_PLACE = {
    "add(half, half, out=double) overflows in half": lambda d: torch.add(
        _t([33000.0], torch.float16, d),
        _t([33000.0], torch.float16, d),
        out=torch.empty(1, dtype=torch.float64, device=d),
    ),
    "add(half, half, out=float)": lambda d: torch.add(
        _t([33000.0], torch.float16, d),
        _t([33000.0], torch.float16, d),
        out=torch.empty(1, device=d),
    ),
    "mul(half, 2, out=float)": lambda d: torch.mul(
        _t([33000.0], torch.float16, d), 2, out=torch.empty(1, device=d)
    ),
    "div(int, int, out=int)": lambda d: torch.div(
        _t([7], torch.int64, d),
        _t([2], torch.int64, d),
        out=torch.empty(1, dtype=torch.int64, device=d),
    ),
    "add(int, int, out=bool)": lambda d: torch.add(
        _t([1], torch.int64, d),
        _t([1], torch.int64, d),
        out=torch.empty(1, dtype=torch.bool, device=d),
    ),
    "neg(float, out=double)": lambda d: torch.neg(
        _t([0.1], torch.float32, d), out=torch.empty(1, dtype=torch.float64, device=d)
    ),
    "sin(bfloat16, out=float)": lambda d: torch.sin(
        _t([0.1], torch.bfloat16, d), out=torch.empty(1, device=d)
    ),
    "eq(out=float)": lambda d: torch.eq(
        _t([1.0], torch.float32, d), 1.0, out=torch.empty(1, device=d)
    ),
    "sum(half, out=float)": lambda d: torch.sum(
        _t([60000.0, 60000.0], torch.float16, d), 0, out=torch.empty((), device=d)
    ),
    "sum(half, dtype=float, out=half)": lambda d: torch.sum(
        _t([1.0], torch.float16, d),
        0,
        dtype=torch.float32,
        out=torch.empty((), dtype=torch.float16, device=d),
    ),
    "mean(float, out=half)": lambda d: torch.mean(
        _t([1.0, 2.0], torch.float32, d), 0, out=torch.empty((), dtype=torch.float16, device=d)
    ),
    "amax(float, out=double)": lambda d: torch.amax(
        _t([1.0, 2.0], torch.float32, d), 0, out=torch.empty((), dtype=torch.float64, device=d)
    ),
    "mm(out=double)": lambda d: torch.mm(
        _t([[1.0]], torch.float32, d),
        _t([[2.0]], torch.float32, d),
        out=torch.empty(1, 1, dtype=torch.float64, device=d),
    ),
    "softmax(out=half)": lambda d: (
        torch._softmax(_t([1.0, 2.0], torch.float32, d), 0, False)
        .new_empty(0)
        .copy_(torch.empty(0))
    ),
    "clamp(half, out=double)": lambda d: torch.clamp(
        _t([1.1], torch.float16, d), 0, 1.0, out=torch.empty(1, dtype=torch.float64, device=d)
    ),
    "where(out=half)": lambda d: torch.where(
        _t([True], torch.bool, d),
        _t([0.1], torch.float32, d),
        1.0,
        out=torch.empty(1, dtype=torch.float16, device=d),
    ),
    "cat(out=half)": lambda d: torch.cat(
        [_t([0.1], torch.float32, d)], out=torch.empty(1, dtype=torch.float16, device=d)
    ),
    "cat(out=int)": lambda d: torch.cat(
        [_t([0.1], torch.float32, d)], out=torch.empty(1, dtype=torch.int64, device=d)
    ),
    "half.add_(float)": lambda d: _t([33000.0], torch.float16, d).add_(
        _t([33000.0], torch.float32, d)
    ),
    "float.add_(half, half)": lambda d: _t([0.0], torch.float32, d).add_(
        _t([33000.0], torch.float16, d), alpha=3
    ),
    "int.add_(float) raises": lambda d: _t([1], torch.int64, d).add_(_t([0.5], torch.float32, d)),
    "int.mul_(1.5) raises": lambda d: _t([1], torch.int64, d).mul_(1.5),
    "bfloat16.mul_(int [1])": lambda d: _t([1.0078125, 3.0], torch.bfloat16, d).mul_(
        _t([257], torch.int64, d)
    ),
    "bool.logical_and_(float)": lambda d: _t([True], torch.bool, d).logical_and_(
        _t([0.5], torch.float32, d)
    ),
    "foreach half add_ float": lambda d: torch._foreach_add_(
        [_t([33000.0], torch.float16, d)], [_t([33000.0], torch.float32, d)]
    ),
}


@pytest.mark.parametrize("case", OUT_AND_IN_PLACE.values(), ids=OUT_AND_IN_PLACE.keys())
def test_out_and_in_place_compute_in_the_promoted_dtype_then_cast(case):
    check(case, float32_precision=True)


# --- validation of reductions and arguments ---------------------------------------------------

VALIDATION = {
    "topk of bool": lambda d: torch.ones(3, dtype=torch.bool, device=d).topk(2),
    "pow(float16, 70000)": lambda d: torch.ones(3, dtype=torch.float16, device=d).pow(70000),
    "pow(float16, -2**63)": lambda d: torch.ones(3, dtype=torch.float16, device=d).pow(-(2**63)),
    "pow(bfloat16, 1e40)": lambda d: torch.ones(3, dtype=torch.bfloat16, device=d).pow(1e40),
    "pow(float16, inf) is fine": lambda d: torch.ones(3, dtype=torch.float16, device=d).pow(
        float("inf")
    ),
    "remainder(float16, -0.512) rounds -0.512": lambda d: torch.remainder(
        torch.tensor([-1.2177734375, -60000.0, 1.353515625], dtype=torch.float16, device=d), -0.512
    ),
    "floor_divide(bfloat16, 0.3) rounds 0.3": lambda d: torch.floor_divide(
        torch.tensor([0.6, -0.9, 3.0], dtype=torch.bfloat16, device=d), 0.3
    ),
    "sum dim=(0, 0)": lambda d: torch.ones(2, 2, device=d).sum(dim=(0, 0)),
    "sum dim=(0, -2)": lambda d: torch.ones(2, 2, device=d).sum(dim=(0, -2)),
    "amax dim=(1, 1)": lambda d: torch.ones(2, 3, device=d).amax(dim=(1, 1)),
    "any dim=(1, 1)": lambda d: torch.ones(2, 3, device=d).any(dim=(1, 1)),
    "norm dim=(0, 0)": lambda d: torch.linalg.vector_norm(torch.ones(2, 2, device=d), dim=(0, 0)),
    "mean dim=(0, 0)": lambda d: torch.ones(2, 2, device=d).mean(dim=(0, 0)),
    "sum dim=5": lambda d: torch.ones(2, 3, device=d).sum(dim=5),
    "65 dims: sum(dim=0)": lambda d: torch.ones([1] * 65, device=d).sum(0),
    "65 dims: sum()": lambda d: torch.ones([1] * 65, device=d).sum(),
    "65 dims: any()": lambda d: torch.ones([1] * 65, device=d).any(),
    "65 dims: all(0)": lambda d: torch.ones([1] * 65, device=d).all(0),
    "65 dims: amax()": lambda d: torch.ones([1] * 65, device=d).amax(),
    "65 dims: norm": lambda d: torch.linalg.vector_norm(torch.ones([1] * 65, device=d)),
    "65 dims: argmax(dim=0)": lambda d: torch.ones([1] * 65, device=d).argmax(0),
    "65 dims: argmin(dim=0)": lambda d: torch.ones([1] * 65, device=d).argmin(0),
    "65 dims: argmax()": lambda d: torch.ones([1] * 65, device=d).argmax(),
    "64 dims: sum(dim=0)": lambda d: torch.ones([1] * 64, device=d).sum(0),
    "lerp(bfloat16, float32)": lambda d: torch.lerp(
        _t([1.0], torch.bfloat16, d), _t([2.0], torch.float32, d), 0.5
    ),
    "lerp_ weight of another dtype": lambda d: _t([1.0], torch.float32, d).lerp_(
        _t([2.0], torch.float32, d), _t([0.5], torch.bfloat16, d)
    ),
    "random_(5, 2)": lambda d: torch.empty(3, device=d).random_(5, 2),
    "random_(-3)": lambda d: torch.empty(3, device=d).random_(-3),
    "uint8 random_(-1, 5)": lambda d: torch.empty(3, dtype=torch.uint8, device=d).random_(-1, 5),
    "uint8 random_(0, 300)": lambda d: torch.empty(3, dtype=torch.uint8, device=d).random_(0, 300),
    "bool random_(0, 3)": lambda d: torch.empty(3, dtype=torch.bool, device=d).random_(0, 3),
    "int8 random_(200)": lambda d: torch.empty(3, dtype=torch.int8, device=d).random_(200),
    "float16 random_(0, 1e5)": lambda d: torch.empty(3, dtype=torch.float16, device=d).random_(
        0, 100000
    ),
    "view_as_complex of a transpose": lambda d: torch.view_as_complex(
        torch.ones(2, 3, device=d).t()
    ),
    "view_as_complex of every other column": lambda d: torch.view_as_complex(
        torch.ones(3, 4, device=d)[:, ::2]
    ),
    "view_as_complex of an odd offset": lambda d: torch.view_as_complex(
        torch.ones(7, device=d)[1:].view(3, 2)
    ),
    "view_as_complex of a last dim of 3": lambda d: torch.view_as_complex(
        torch.ones(3, 3, device=d)
    ),
    "view_as_complex of an int64": lambda d: torch.view_as_complex(
        torch.ones(3, 2, dtype=torch.int64, device=d)
    ),
    "clamp()": lambda d: torch.clamp(torch.ones(2, device=d)),
    "mm of mismatched dtypes": lambda d: torch.mm(
        _t([[1.0]], torch.float32, d), _t([[1.0]], torch.bfloat16, d)
    ),
    "cat of a 0-d tensor": lambda d: torch.cat([_t(1.0, torch.float32, d)]),
    "softmax dim 3": lambda d: torch.softmax(torch.ones(2, device=d), 3),
    "pow(int, -1)": lambda d: torch.pow(_t([2], torch.int64, d), -1),
    # Scalars the CPU converts with a range check (Scalar::to<T>).
    "uint8 add alpha=300": lambda d: torch.add(
        _t([1], torch.uint8, d), _t([1], torch.uint8, d), alpha=300
    ),
    "uint8 add alpha=-255 wraps": lambda d: torch.add(
        _t([1], torch.uint8, d), _t([1], torch.uint8, d), alpha=-255
    ),
    "float16 sub alpha=1e6": lambda d: torch.sub(
        _t([1.0], torch.float16, d), _t([1.0], torch.float16, d), alpha=1e6
    ),
    "float32 add alpha=1e300": lambda d: torch.add(
        _t([1.0], torch.float32, d), _t([1.0], torch.float32, d), alpha=1e300
    ),
    "uint8 addcmul_ value=-0.5": lambda d: _t([1], torch.uint8, d).addcmul_(
        _t([1], torch.uint8, d), _t([1], torch.uint8, d), value=-0.5
    ),
    "uint8 addcmul_ value=300": lambda d: _t([1], torch.uint8, d).addcmul_(
        _t([1], torch.uint8, d), _t([1], torch.uint8, d), value=300
    ),
    "int64 addcmul value=0.5 truncates": lambda d: torch.addcmul(
        _t([1], torch.int64, d), _t([3], torch.int64, d), _t([1], torch.int64, d), value=0.5
    ),
    "float16 addcmul value=1e5 (float opmath)": lambda d: torch.addcmul(
        _t([1.0], torch.float16, d),
        _t([1.0], torch.float16, d),
        _t([1.0], torch.float16, d),
        value=1e5,
    ),
    "uint8 clamp(0, 300)": lambda d: torch.clamp(_t([1], torch.uint8, d), 0, 300),
    "float16 clamp_min(-1e6)": lambda d: torch.clamp_min(_t([1.0], torch.float16, d), -1e6),
    "uint8 masked_fill 300": lambda d: _t([1], torch.uint8, d).masked_fill(
        _t([True], torch.bool, d), 300
    ),
    "float16 foreach add alpha=1e6": lambda d: torch._foreach_add(
        [_t([1.0], torch.float16, d)], [_t([1.0], torch.float16, d)], alpha=1e6
    ),
    "float16 foreach addcmul value=1e5": lambda d: torch._foreach_addcmul(
        [_t([1.0], torch.float16, d)],
        [_t([1.0], torch.float16, d)],
        [_t([1.0], torch.float16, d)],
        1e5,
    ),
    "where of an int64 condition": lambda d: torch.where(
        _t([1], torch.int64, d), _t([1.0], torch.float32, d), _t([2.0], torch.float32, d)
    ),
    "masked_fill of an int64 mask": lambda d: _t([1.0], torch.float32, d).masked_fill(
        _t([1], torch.int64, d), 2.0
    ),
    "vector_norm to a narrower dtype": lambda d: torch.linalg.vector_norm(
        _t([3.0, 4.0], torch.float32, d), dtype=torch.bfloat16
    ),
    "softmax half_to_float of float32": lambda d: torch._softmax(
        _t([1.0, 2.0], torch.float32, d), 0, True
    ),
    "nll_loss of an int32 target": lambda d: torch.nn.functional.nll_loss(
        _t([[0.1, 0.2]], torch.float32, d), _t([1], torch.int32, d)
    ),
    "nll_loss weight of the wrong size": lambda d: torch.nn.functional.nll_loss(
        _t([[0.1, 0.2]], torch.float32, d),
        _t([1], torch.int64, d),
        weight=_t([1.0], torch.float32, d),
    ),
}


@pytest.mark.parametrize("case", VALIDATION.values(), ids=VALIDATION.keys())
def test_arguments_the_cpu_refuses_are_refused(case):
    check(case)


@pytest.mark.parametrize(
    "dtype, bounds, below",
    [
        # 65503 rounds to 65504 in float16: the CPU moves 'to' down to 65472, the float16 below.
        (torch.float16, (0, 65504), 65504),
        (torch.bfloat16, (0, 300), 300),
        (torch.uint8, (250, None), 256),
    ],
    ids=["float16 [0, 65504)", "bfloat16 [0, 300)", "uint8 [250, 255]"],
)
def test_random_draws_stay_below_to_after_the_cast(dtype, bounds, below):
    torch.manual_seed(0)
    with (
        pytest.warns(UserWarning, match="out of bounds")
        if dtype.is_floating_point
        else nullcontext()
    ):
        x = torch.empty(100_000, dtype=dtype, device=n()).random_(*bounds).cpu().double()
    assert bounds[0] <= x.min().item() and x.max().item() < below


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize(
    "reduce",
    [torch.all, torch.any, torch.sum, torch.amax, torch.amin, torch.mean, torch.linalg.vector_norm],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("dim", [[], None, [0], [-1, 0]], ids=["[]", "None", "[0]", "[-1,0]"])
def test_reductions_over_a_dim_list_match_the_cpu(reduce, dim, keepdim):
    # all/any(dim=[]) reduce nothing; sum, amax, mean, ... reduce every dim.
    def fn(d):
        x = torch.tensor([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]], device=d)
        if dim is None:
            return reduce(x) if not keepdim else reduce(x, dim=None, keepdim=True)
        return reduce(x, dim=dim, keepdim=keepdim)

    check(fn)


# --- PyTorch's OpInfo error inputs for every lowered op -----------------------------------------


def _error_opinfos():
    import opinfo_parity

    registry = opinfo_parity.native_registry()
    selection = opinfo_parity.select(opinfo_parity._load_op_db(), registry)
    return {
        oid: op
        for oid, op in sorted(selection.ops.items())
        if op.error_inputs_func is not None
        and (
            any(True for _ in op.error_inputs("cpu"))
            or any(True for _ in op.error_inputs("neuron"))
        )
    }


ERROR_OPINFOS = _error_opinfos()


@pytest.mark.parametrize("oid", sorted(ERROR_OPINFOS))
def test_opinfo_error_inputs_raise_the_cpus_exception(oid):
    """Each OpInfo error input of an op vtrn lowers: `neuron` raises the exception type the CPU
    raises (or, like the CPU, none). Error inputs an OpInfo only builds for an accelerator
    (tensors on two devices) must raise what the OpInfo says."""
    op = ERROR_OPINFOS[oid]
    cpu_inputs = list(op.error_inputs("cpu"))
    dev_inputs = list(op.error_inputs("neuron"))

    def run(sample):
        return lambda _: op.op(sample.input, *sample.args, **sample.kwargs)

    if len(cpu_inputs) == len(dev_inputs):
        for c, d in zip(cpu_inputs, dev_inputs):
            cpu, dev = outcome(run(c.sample_input), "cpu"), outcome(run(d.sample_input), "neuron")
            assert dev[:2] == cpu[:2], (
                f"{c.error_regex!r}: cpu gave {cpu[:3]}; neuron gave {dev[:3]}"
            )
    else:
        for d in dev_inputs:
            dev = outcome(run(d.sample_input), "neuron")
            assert dev[0] == "err" and issubclass(dev[1], d.error_type), (d.error_regex, dev[:3])
            assert re.search(d.error_regex, dev[2]), (d.error_regex, dev[2])
