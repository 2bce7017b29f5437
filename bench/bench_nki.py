"""The NKI samples on vtrn: how long the CPU interpreter takes, and the modeled trn2 time.

Run: python bench/bench_nki.py
For each sample kernel (copied unchanged into tests/nki/samples) it prints the tracing time of
the first call, the C++ interpreter's wall time (median of a few cached runs), the modeled
latency on one trn2 NeuronCore, the busiest engine, and, for the matmuls, cost's whole-kernel
time for the same dot_general. Wall times depend on the machine and its load; the modeled
times do not.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "nki"))
os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn2"

from sample_loader import load_sample  # noqa: E402

import nki  # noqa: E402
from nki._native import native  # noqa: E402

REPEAT = 3


def bf16(rng, shape):
    import ml_dtypes

    return rng.random(shape).astype(ml_dtypes.bfloat16)


def cases():
    rng = np.random.default_rng(0)
    add = load_sample("tensor_addition_legacy")
    add_new = load_sample("tensor_addition_new")
    os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn2"  # the sample sets trn1 on import
    mm = load_sample("matrix_multiplication")
    rms = load_sample("rmsnorm")
    attn = load_sample("attention_kernels")
    flash = load_sample("flash_attention")

    a16 = rng.random((1024, 2048)).astype(np.float16)
    a32 = rng.random((1024, 2048)).astype(np.float32)
    yield (
        "tensor add, legacy [8, 4] grid",
        "1024x2048 fp16",
        lambda: add.nki_tensor_add(a16, a16),
        None,
    )
    yield (
        "tensor add, NKI 0.2+",
        "1024x2048 fp32",
        lambda: nki.simulate(add_new.nki_tensor_add)(a32, a32),
        None,
    )

    k, m, n = 1024, 1024, 2048
    lhs_t, rhs = bf16(rng, (k, m)), bf16(rng, (k, n))
    dot = (m, n, k, float((k * m + k * n + m * n) * 2))
    for name in ["nki_matmul_tiled_", "nki_matmul_hoist_load_", "nki_matmul_block_free_dimension_"]:
        fn = getattr(mm, name)
        yield (
            f"matmul {name.strip('_').replace('nki_matmul_', '')}",
            "K=M=1024 N=2048 bf16",
            (lambda fn=fn: nki.simulate(fn)(lhs_t, rhs)),
            dot,
        )
    lhs_t2 = bf16(rng, (k, 2048))
    yield (
        "matmul fully_optimized",
        "K=1024 M=N=2048 bf16",
        (lambda: nki.simulate(mm.nki_matmul_fully_optimized_)(lhs_t2, rhs)),
        (2048, n, k, float((k * 2048 + k * n + 2048 * n) * 2)),
    )

    x = rng.random((1000, 1024)).astype(np.float32)
    g = rng.random(1024).astype(np.float32)
    yield "rmsnorm (masked last tile)", "1000x1024 fp32", lambda: rms.nki_rmsnorm_kernel(x, g), None

    for version, seqlen in [("attn_fwd_v1", 128), ("attn_fwd_v2", 128), ("attn_fwd_v3", 512)]:
        q = ((rng.random((128, seqlen)) - 0.5) * 2).astype(np.float32)
        fn = getattr(attn, version)
        yield (
            f"attention {version[-2:]}",
            f"d=128 seq={seqlen} fp32",
            lambda fn=fn, q=q: fn(q, q, q),
            None,
        )

    qf = ((rng.random((1, 1, 128, 4096)) - 0.5) * 2).astype(np.float32)
    vf = ((rng.random((1, 1, 4096, 128)) - 0.5) * 2).astype(np.float32)
    config = flash.FlashConfig(seq_tile_size=2048, training=False)
    yield (
        "flash attention fwd (causal)",
        "1 head d=128 seq=4096",
        (
            lambda: nki.simulate_kernel(
                flash.flash_fwd[1, 1], qf, qf, vf, None, use_causal_mask=True, config=config
            )
        ),
        None,
    )


def main():
    header = f"{'kernel':34} {'shape':24} {'insts':>6} {'trace s':>8} {'interp s':>9} {'trn2 us':>9} {'bound':>7} {'cost us':>8}"
    print(header)
    print("-" * len(header))
    for name, shape, run, dot in cases():
        run()  # traces and caches the program
        first = nki.last_run()
        walls = []
        for _ in range(REPEAT):
            start = time.perf_counter()
            run()
            walls.append(time.perf_counter() - start)
        r = nki.last_run()
        bound = max(r.engine_busy_us, key=r.engine_busy_us.get)
        cost = ""
        if dot is not None:
            cost = (
                f"{native.kernel_cost('trn2', *dot[:3], 'bfloat16', dot[3])['time_s'] * 1e6:8.1f}"
            )
        print(
            f"{name:34} {shape:24} {r.instructions:6d} {first.trace_s:8.3f} {statistics.median(walls):9.3f} "
            f"{r.latency_us:9.1f} {bound:>7} {cost:>8}"
        )


if __name__ == "__main__":
    main()
