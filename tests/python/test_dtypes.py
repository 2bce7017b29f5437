"""Dtype rules from "What is TorchNeuron?": float64 runs as float32; FP8 requires Trainium 3."""

import os
import warnings

import pytest
import torch
from conftest import run_python


def test_float64_is_computed_as_float32_and_stored_as_float64():
    x64 = torch.tensor([1.0 + 1e-10, 2.0 / 3.0, 1e-45, 123456789.123456789], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = (
            torch.sin(x64.to("neuron")) + 1e-12 * 0
        )  # float64 is not lowered: the fallback runs both
        diff = (x64.to("neuron") - 1.0).cpu()
    got = out.cpu()
    assert got.dtype == torch.float64
    # The float32 reference, computed independently and widened.
    reference = torch.sin(x64.float()).double()
    assert torch.equal(got, reference)
    # float64 would keep 1e-10; float32 cannot represent 1 + 1e-10.
    assert diff[0].item() == 0.0 and torch.sin(x64)[0].item() != got[0].item()
    assert torch.equal(diff, (x64.float() - 1.0).double())


def test_float64_in_place_ops_write_back():
    t = torch.tensor([1.0, 2.0], dtype=torch.float64, device="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.mul_(1.0 / 3.0)
    assert t.dtype == torch.float64
    assert torch.equal(t.cpu(), (torch.tensor([1.0, 2.0]) * (1.0 / 3.0)).double())


@pytest.mark.parametrize("shape", [(), (1,), (5, 3)])
def test_float64_hash_reads_the_stored_bits(shape):
    """hash_tensor does no arithmetic: the float64 values stored are what it hashes, as on the
    CPU (a float32 stand-in would hash other bits)."""
    x = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert x.float().double().ne(x).any()  # values float32 cannot hold
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.hash_tensor(x.to("neuron")).cpu()
        by_dim = torch.hash_tensor(x.to("neuron"), dim=-1).cpu() if shape else None
    assert torch.equal(got, torch.hash_tensor(x))
    if shape:
        assert torch.equal(by_dim, torch.hash_tensor(x, dim=-1))


def test_float64_warns_once_per_process():
    result = run_python(
        """
        import warnings, torch
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = torch.ones(3, dtype=torch.float64, device="neuron")
            (x * 2).cpu(); (x + 1).cpu(); torch.exp(x).cpu()
        print(sum("computes float64 as float32" in str(w.message) for w in caught))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_requires_trainium3(dtype):
    with pytest.raises(
        RuntimeError, match="FP8 requires Trainium3: .* cannot be created on trn2.48xlarge, LNC2"
    ):
        torch.empty(4, dtype=dtype, device="neuron")
    with pytest.raises(RuntimeError, match="FP8 requires Trainium3"):
        torch.ones(4).to(dtype).to("neuron")


def test_fp8_works_on_trn3():
    env = dict(os.environ, NEURON_RT_FAKE_INSTANCE_TYPE="trn3.gen1-server")
    result = run_python(
        """
        import torch
        x = torch.tensor([0.5, 1.0, 2.0]).to(torch.float8_e4m3fn)
        print(torch.equal(x.to("neuron").cpu().float(), x.float()))
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_native_dtypes_are_supported():
    for dtype in [
        torch.bfloat16,
        torch.float16,
        torch.float32,
        torch.complex64,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint8,
        torch.bool,
    ]:
        t = torch.zeros(2, dtype=dtype, device="neuron")
        assert t.dtype == dtype


def test_vtrn_fallback_error_names_the_op():
    env = dict(os.environ, VTRN_FALLBACK="error")
    result = run_python(
        """
        import torch
        a = torch.ones(3, device="neuron")   # native: works
        a.fill_(2.0)
        try:
            torch.atan(a)
        except NotImplementedError as e:
            print(e)
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "CPU fallback is disabled for operation=aten::atan.out" in result.stdout
    assert "Unset VTRN_FALLBACK" in result.stdout
