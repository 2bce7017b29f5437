"""The attention-forward tutorial kernels v1-v3 (legacy API: nl.matmul, nl.transpose,
value-returning nisa calls, block dimensions, nl.par_dim), checked against the tutorial's
NumPy reference at its tolerance (atol=1e-2)."""

import numpy as np
import pytest
from sample_loader import load_sample

import nki
import nki.isa


def numpy_attention(q, k, v):
    # The tutorial's reference (test_attention.py).
    qk = np.matmul(q.T, k)
    row_max = np.max(qk, axis=1, keepdims=True)
    exp_row = np.exp(qk - row_max)
    scores = exp_row / np.sum(exp_row, axis=1, keepdims=True)
    return np.matmul(scores, v.T)


def inputs(seqlen, seed):
    rng = np.random.default_rng(seed)
    return [((rng.random((128, seqlen)) - 0.5) * 2).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize(
    "version,seqlen", [("attn_fwd_v1", 128), ("attn_fwd_v2", 128), ("attn_fwd_v3", 512)]
)
def test_attention_versions(version, seqlen):
    sample = load_sample("attention_kernels")
    q, k, v = inputs(seqlen, seqlen)
    out = getattr(sample, version)(q, k, v)
    assert out.shape == (seqlen, 128)
    assert np.allclose(out, numpy_attention(q, k, v), atol=1e-2)


def test_v3_at_the_tutorials_4096_needs_more_psum_than_the_core_has():
    """v3 keeps every (128 x 512) QK^T block in PSUM until the softmax: at seqlen 4096 that is
    32 x 8 blocks of 2 KiB per partition, 32 times PSUM's 16 KiB. The AWS simulator runs it;
    vtrn refuses it with the bytes."""
    sample = load_sample("attention_kernels")
    q, k, v = inputs(4096, 0)
    with pytest.raises(nki.isa.NkiCapacityError, match="PSUM capacity exceeded on trn2") as err:
        sample.attn_fwd_v3(q, k, v)
    assert "bytes per partition" in str(err.value) and "qk[" in str(err.value)
