"""The flash-attention forward kernel from nki-samples (legacy API: trace-mode helper kernels,
affine_select causal masks, activation_reduce, block tiles, a 2-D SPMD grid), run as the
sample's own simulation test runs it (simulate_kernel(baremetal(flash_fwd)[b, h], ...)) and
checked against the sample's NumPy reference at its tolerance (atol=1e-2)."""

import numpy as np
import pytest
from sample_loader import load_sample

import neuronxcc.nki.language as nl
import nki
from neuronxcc.nki import baremetal, simulate_kernel

# The sample's simulation cases (test_flash_attn_fwd_numerical), minus the dtype column: all
# run in float32 with mixed precision.
CASES = [
    # bs, nheads, seqlen_q, seqlen_k, d, use_causal_mask, sliding_window, training, tile, kv_heads
    (1, 6, 4096, 4096, 128, True, -1, True, 2048, 3),
    (1, 1, 4096, 4096, 128, True, -1, False, 2048, None),
    (1, 1, 8192, 4096, 128, True, -1, False, 2048, None),
    (1, 1, 4096, 8192, 128, True, -1, False, 2048, None),
    (1, 1, 4096, 4096, 128, True, 1024, False, 2048, None),
]


@pytest.mark.parametrize(
    "case", CASES, ids=["gqa-training", "causal", "longer-q", "longer-k", "sliding"]
)
def test_flash_fwd_matches_the_samples_reference(case):
    (
        bs,
        nheads,
        seqlen_q,
        seqlen_k,
        d,
        use_causal_mask,
        sliding_window,
        training,
        tile_size,
        kv_heads,
    ) = case
    sample = load_sample("flash_attention")
    ref = load_sample("flash_attention_reference")
    rng = np.random.default_rng(seqlen_q + seqlen_k + nheads)
    q = (rng.random([bs, nheads, d, seqlen_q]) - 0.5) * 2
    k = (rng.random([bs, kv_heads or nheads, d, seqlen_k]) - 0.5) * 2
    v = (rng.random([bs, kv_heads or nheads, seqlen_k, d]) - 0.5) * 2
    q, k, v = (nl.static_cast(x, np.float32) for x in (q, k, v))

    o_golden, neg_max, sum_recip = ref.cpu_attention_forward(
        q,
        k,
        v.transpose(0, 1, 3, 2),
        use_causal_mask=use_causal_mask,
        sliding_window=sliding_window,
        mixed_precision=True,
    )
    o_golden = o_golden.transpose(0, 1, 3, 2)
    config = sample.FlashConfig(
        seq_tile_size=tile_size, training=training, should_transpose_v=False
    )
    heads = nheads if kv_heads is None else kv_heads
    results = simulate_kernel(
        baremetal(sample.flash_fwd)[bs, heads],
        q,
        k,
        v,
        None,
        use_causal_mask=use_causal_mask,
        sliding_window=sliding_window,
        mixed_precision=True,
        config=config,
    )
    if training:
        o, lse = results
        neg_max = neg_max.reshape(bs, nheads, seqlen_q // 128, 128).transpose(0, 1, 3, 2)
        sum_recip = sum_recip.reshape(bs, nheads, seqlen_q // 128, 128).transpose(0, 1, 3, 2)
        lse_golden = -1.0 * (neg_max + np.log(sum_recip))
        assert np.allclose(lse, lse_golden, atol=1e-2)
    else:
        o = results
    assert np.allclose(o, o_golden, atol=1e-2)
    run = nki.last_run()
    assert run.grid == (bs, heads)
    assert run.latency_us > 0 and run.sbuf_peak_bytes_per_partition > 0
