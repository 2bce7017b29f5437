"""The matrix-multiplication tutorial kernels (NKI 0.2+ API), checked against torch.matmul at
the tutorial's tolerance (atol=1e-4, rtol=1e-2), and the tiled kernel's modeled time against
cost's model of the same dot_general."""

import ml_dtypes
import numpy as np
import pytest
import torch
from sample_loader import load_sample

import nki
from nki._native import native


@pytest.fixture(scope="module")
def mm():
    return load_sample("matrix_multiplication")


def test_basic_kernel_on_numpy_bf16(mm):
    rng = np.random.default_rng(1)
    lhs = rng.random((64, 128)).astype(ml_dtypes.bfloat16)
    rhs = rng.random((128, 512)).astype(ml_dtypes.bfloat16)
    out = nki.simulate(mm.nki_matmul_basic_)(np.ascontiguousarray(lhs.T), rhs)
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (64, 512)
    ref = lhs.astype(np.float32) @ rhs.astype(np.float32)
    assert np.allclose(ref, out.astype(np.float32), atol=1e-4, rtol=1e-2)


TILED = ["nki_matmul_tiled_", "nki_matmul_hoist_load_", "nki_matmul_block_free_dimension_"]


@pytest.fixture(scope="module")
def tiled_runs(mm):
    """Each tiled kernel once on K = M = 1024, N = 2048 bf16 torch tensors."""
    torch.manual_seed(0)
    lhs = torch.rand((1024, 1024), dtype=torch.bfloat16)
    rhs = torch.rand((1024, 2048), dtype=torch.bfloat16)
    ref = torch.matmul(lhs, rhs)
    runs = {}
    for name in TILED:
        out = getattr(mm, name)(lhs.T, rhs)
        runs[name] = (out, nki.last_run())
    return ref, runs


@pytest.mark.parametrize("name", TILED)
def test_tiled_kernels_on_torch_tensors(tiled_runs, name):
    ref, runs = tiled_runs
    out, _ = runs[name]
    assert out.dtype == torch.bfloat16 and out.shape == (1024, 2048)
    assert torch.allclose(ref, out, atol=1e-4, rtol=1e-2)


def test_fully_optimized_kernel(mm):
    torch.manual_seed(1)
    lhs = torch.rand((2048, 1024), dtype=torch.bfloat16)
    rhs = torch.rand((1024, 2048), dtype=torch.bfloat16)
    out = mm.nki_matmul_fully_optimized_(lhs.T, rhs)
    assert torch.allclose(torch.matmul(lhs, rhs), out, atol=1e-4, rtol=1e-2)
    # The tutorial's point: blocking all dimensions gets close to the Tensor engine's peak.
    cost = native.kernel_cost(
        "trn2", 2048, 2048, 1024, "bfloat16", float((2048 + 2048 + 2048) * 1024 * 2)
    )
    assert nki.last_run().latency_us <= 1.25 * cost["time_s"] * 1e6


def test_tiled_matmul_modeled_time_against_cost(tiled_runs):
    """K = M = 1024, N = 2048, bf16 on trn2.

    cost models the dot_general as tensor-bound: 2*1024*1024*2048 FLOP at 79 TFLOPS = 54.4 us,
    plus the 1.3 us DMA start, 55.7 us. The tiled sample does the same 256 matmuls (54.6 us of
    Tensor engine time) but reloads both operands for every output tile: 256 lhsT tiles of 128
    rows x 256 B and 256 rhs tiles of 128 rows x 1 KiB, plus 32 result tiles of 128 x 1 KiB,
    40 MiB in rows that small that each pays 512 B of DMA overhead. At the core's 362.5 GB/s
    HBM share that is 256 * (32768 + 65536) / 362.5e9 + 256 * (131072 + 65536) / 362.5e9
    + 32 * (131072 + 65536) / 362.5e9 = 225.6 us of DMA, so the kernel is DMA-bound at about
    4x cost's time. The stated bound: cost's time <= modeled time <= 4.5x cost's time."""
    run = tiled_runs[1]["nki_matmul_tiled_"][1]
    cost = native.kernel_cost(
        "trn2", 1024, 2048, 1024, "bfloat16", float((1024 * 1024 + 2 * 1024 * 2048) * 2)
    )
    cost_us = cost["time_s"] * 1e6
    assert cost["engine"] == "tensor" and cost_us == pytest.approx(55.67, abs=0.01)
    dma_us = (
        (256 * (32768 + 65536) + 256 * (131072 + 65536) + 32 * (131072 + 65536)) / 362.5e9 * 1e6
    )
    assert run.engine_busy_us["dma"] == pytest.approx(dma_us, rel=1e-9)
    assert run.engine_busy_us["tensor"] == pytest.approx(256 * 512 / 2.4e9 * 1e6, rel=1e-9)
    assert cost_us <= run.latency_us <= 4.5 * cost_us
    assert run.matmul_flops == 2 * 1024 * 1024 * 2048


def test_each_tutorial_step_is_faster(tiled_runs):
    """The tutorial's progression: hoisting loads, then blocking free dimensions, cut time."""
    times = [tiled_runs[1][name][1].latency_us for name in TILED]
    assert times[0] > times[1] > times[2]
