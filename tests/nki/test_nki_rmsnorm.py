"""The RMSNorm sample (legacy API: index grids, masks, reductions, partition broadcast),
checked against the sample's own NumPy reference at its tolerance (atol=1e-4, rtol=1e-2)."""

import numpy as np
import pytest
from sample_loader import load_sample

import nki


def reference(a, g):
    # The sample's one-line NumPy RMSNorm.
    return a * (1.0 / np.sqrt(np.mean(a * a, axis=1).reshape(a.shape[0], 1))) * g


@pytest.mark.parametrize("rows", [128, 250, 384])
def test_rmsnorm_sample(rows):
    sample = load_sample("rmsnorm")
    rng = np.random.default_rng(rows)
    a = rng.random((rows, 512)).astype(np.float32)
    g = rng.random(512).astype(np.float32)
    out = sample.nki_rmsnorm_kernel(a, g)
    assert np.allclose(reference(a, g), out, atol=1e-4, rtol=1e-2)
    assert not np.isnan(out).any()


def test_rmsnorm_through_simulate_kernel_and_the_mask_keeps_rows_past_the_end_untouched():
    sample = load_sample("rmsnorm")
    rng = np.random.default_rng(7)
    a = rng.random((130, 256)).astype(np.float32)
    g = rng.random(256).astype(np.float32)
    out = nki.simulate_kernel(sample.nki_rmsnorm_kernel, a, g)
    assert np.allclose(reference(a, g), out, atol=1e-4, rtol=1e-2)
    # Two row tiles: the second one's load, multiply and store are masked to 2 of 128 rows.
    run = nki.last_run()
    assert run.engine_instructions["dma"] == 1 + 2 * 2
