# Adapted for the `neuron` device from torch_openreg's tests/test_opinfo.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""OpInfo-driven checks of the ops openreg lists (add, mul, empty, zeros, ones): results on
the device, out= semantics, and non-contiguous inputs giving the contiguous result and
gradients. (openreg instantiates these through PyTorch's device-type test harness; here the
OpInfo samples are generated for "neuron" directly. test_op_parity.py compares every op vtrn
lowers with the CPU.)"""

from collections.abc import Sequence

import opinfo_parity
import pytest
import torch

OPENREG_OPS = {"add", "mul", "empty", "zeros", "ones"}
OPS = sorted(
    (
        op
        for op in opinfo_parity._load_op_db()
        if op.name in OPENREG_OPS and not op.variant_test_name
    ),
    key=lambda op: op.name,
)
IDS = [op.name for op in OPS]


def _first_sample(op, dtype, **kwargs):
    return next(iter(op.sample_inputs("neuron", dtype, **kwargs)))


def _on_neuron(result):
    results = result if isinstance(result, (tuple, list)) else [result]
    return all(r.device.type == "neuron" for r in results if isinstance(r, torch.Tensor))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_op_basic_functionality(op, dtype):
    sample = _first_sample(op, dtype)
    assert _on_neuron(op(sample.input, *sample.args, **sample.kwargs))


@pytest.mark.parametrize("op", [op for op in OPS if op.supports_out], ids=lambda op: op.name)
def test_out_argument(op):
    sample = _first_sample(op, torch.float32)
    expected = op(sample.input, *sample.args, **sample.kwargs)
    out = torch.empty_like(expected)
    original_data_ptr = out.data_ptr()
    result = op(sample.input, *sample.args, **sample.kwargs, out=out)
    assert result is out
    assert out.device.type == "neuron"
    assert out.data_ptr() == original_data_ptr
    if op.name not in ("empty",):
        torch.testing.assert_close(out.cpu(), expected.cpu())


# factories (empty, zeros, ones) have no input to make non-contiguous
@pytest.mark.parametrize(
    "op", [op for op in OPS if op.name not in {"empty", "zeros", "ones"}], ids=lambda op: op.name
)
def test_noncontiguous_samples(op):
    # importable once opinfo_parity has loaded op_db (it stands in for PyTorch's test-only
    # dependency, expecttest)
    from torch.testing._internal.common_utils import noncontiguous_like

    dtype = torch.float32
    test_grad = dtype in op.supported_backward_dtypes("neuron")
    for sample_input in op.sample_inputs("neuron", dtype, requires_grad=test_grad):
        t_inp, t_args, t_kwargs = sample_input.input, sample_input.args, sample_input.kwargs
        noncontig = sample_input.noncontiguous()
        n_inp, n_args, n_kwargs = noncontig.input, noncontig.args, noncontig.kwargs

        expected = op(t_inp, *t_args, **t_kwargs)
        actual = op(n_inp, *n_args, **n_kwargs)
        torch.testing.assert_close(actual.cpu(), expected.cpu())
        if not test_grad:
            continue

        expected = sample_input.output_process_fn_grad(expected)
        actual = sample_input.output_process_fn_grad(actual)
        if isinstance(expected, torch.Tensor):
            grad_for_expected = torch.randn_like(expected)
            grad_for_actual = noncontiguous_like(grad_for_expected)
        elif isinstance(expected, Sequence):
            expected = [t for t in expected if isinstance(t, torch.Tensor) and t.requires_grad]
            actual = [n for n in actual if isinstance(n, torch.Tensor) and n.requires_grad]
            grad_for_expected = [torch.randn_like(t) for t in expected]
            grad_for_actual = [noncontiguous_like(n) for n in grad_for_expected]
        else:
            continue

        t_inputs = (t_inp,) + t_args if isinstance(t_inp, torch.Tensor) else tuple(t_inp) + t_args
        n_inputs = (n_inp,) + n_args if isinstance(n_inp, torch.Tensor) else tuple(n_inp) + n_args
        t_tensors = [t for t in t_inputs if isinstance(t, torch.Tensor) and t.requires_grad]
        n_tensors = [n for n in n_inputs if isinstance(n, torch.Tensor) and n.requires_grad]
        assert len(t_tensors) == len(n_tensors)
        t_grads = torch.autograd.grad(expected, t_tensors, grad_for_expected, allow_unused=True)
        n_grads = torch.autograd.grad(actual, n_tensors, grad_for_actual, allow_unused=True)
        for i, (t, n) in enumerate(zip(t_grads, n_grads)):
            torch.testing.assert_close(n.cpu(), t.cpu(), msg=f"gradient wrt input {i}")
