"""The tensor-addition samples (legacy and NKI 0.2+ API) on NumPy arrays, checked against
NumPy at the samples' own tolerance (atol=1e-4, rtol=1e-2)."""

import numpy as np
import pytest
from sample_loader import load_sample

import nki


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_legacy_sample_runs_its_spmd_grid_on_numpy(rng):
    sample = load_sample("tensor_addition_legacy")
    a = rng.random((256, 1024)).astype(np.float16)
    b = rng.random((256, 1024)).astype(np.float16)
    out = sample.nki_tensor_add(a, b)  # launches nki_tensor_add_kernel_[2, 2]
    assert out.dtype == np.float16 and out.shape == (256, 1024)
    assert np.allclose(a + b, out, atol=1e-4, rtol=1e-2)
    run = nki.last_run()
    assert run.grid == (2, 2)
    # 4 instances x (2 loads + 1 add + 1 store)
    assert run.instructions == 16
    assert run.engine_instructions["dma"] == 12


def test_legacy_sample_through_simulate_kernel(rng):
    sample = load_sample("tensor_addition_legacy")
    a = rng.random((128, 512)).astype(np.float32)
    b = rng.random((128, 512)).astype(np.float32)
    out = nki.simulate_kernel(sample.nki_tensor_add_kernel_[1, 1], a, b)
    np.testing.assert_array_equal(out, a + b)


def test_new_sample_through_simulate(rng, monkeypatch):
    sample = load_sample("tensor_addition_new")
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")  # what the sample sets
    a = rng.random((256, 1024)).astype(np.float32)
    b = rng.random((256, 1024)).astype(np.float32)
    out = nki.simulate(sample.nki_tensor_add)(a, b)
    np.testing.assert_array_equal(out, a + b)
    assert nki.last_run().target == "trn1"


def test_unwritten_output_reads_as_nan(rng):
    import nki.language as nl

    @nki.jit
    def half_add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a[0:64, :])
        nl.store(out[0:64, :], nl.add(t, nl.load(b[0:64, :])))
        return out

    a = rng.random((128, 8)).astype(np.float32)
    out = nki.simulate(half_add)(a, a)
    np.testing.assert_array_equal(out[:64], 2 * a[:64])
    assert np.isnan(out[64:]).all()


def test_outside_a_kernel_nki_calls_fail_clearly():
    import nki.language as nl

    with pytest.raises(
        RuntimeError, match="Calling NKI API outside of NKI kernels is not supported"
    ):
        nl.ndarray((4, 4), dtype=nl.float32)


def test_benchmark_reports_the_modeled_latency_and_profile_writes_the_timeline(rng, tmp_path):
    import json

    from neuronxcc.nki import benchmark, profile

    sample = load_sample("tensor_addition_legacy")
    a = rng.random((256, 1024)).astype(np.float16)
    bench = benchmark(warmup=5, iters=10)(sample.nki_tensor_add_kernel_)[2, 2]
    out = bench(a, a)
    np.testing.assert_array_equal(out, a + a)
    latency = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    run = nki.last_run()
    assert latency == run.latency_us == bench.benchmark_result.nc_latency.get_latency_percentile(99)
    # Four independent instances: 8 loads of 128 x 1 KiB rows, 4 adds, 4 stores on trn2. The DMA
    # queue is busy (12 * (131072 + 65536) / 362.5e9) and the run ends after the last store.
    assert run.engine_busy_us["dma"] == pytest.approx(12 * (131072 + 65536) / 362.5e9 * 1e6)
    assert run.latency_us > run.engine_busy_us["dma"]

    prof = profile(working_directory=str(tmp_path), save_trace_name="add")(
        sample.nki_tensor_add_kernel_
    )[2, 2]
    prof(a, a)
    events = json.loads((tmp_path / "add.json").read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert len(spans) == 16 and {e["name"] for e in spans} == {"load", "add", "store"}
    assert max(e["ts"] + e["dur"] for e in spans) <= run.latency_us
