"""The planner's full search for llama3-70b on 64 trn2.48xlarge nodes (4,096 ranks at LNC2), and
layouts evaluated per second. Target: the 64-node llama3-70b search in 0.2 s on this machine.

Run: python bench/bench_plan.py
Figures are medians of several runs: the search inside the native planner (C++, reached through
vtrn._native), and `vtrn plan` end to end as a fresh process (interpreter start included), like
a user typing it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

REPEAT = 5
CASES = [
    (
        "llama3-70b, 64 nodes, seq 8192",
        dict(model="llama3-70b", nodes=64, seq=8192, global_batch=1024),
    ),
    (
        "llama3-70b, 64 nodes, seq 2048",
        dict(model="llama3-70b", nodes=64, seq=2048, global_batch=1024),
    ),
    (
        "llama3.1-405b, 64 nodes, seq 8192",
        dict(model="llama3.1-405b", nodes=64, seq=8192, global_batch=2048),
    ),
    ("llama2-7b, 1 node, seq 2048", dict(model="llama2-7b", nodes=1, seq=2048, global_batch=512)),
]


def main() -> int:
    from vtrn import _native

    print(
        f"{'case':<36} {'search s':>9} {'layouts':>8} {'pruned':>7} {'layouts/s':>10} {'placement searches':>19}  best"
    )
    for name, kw in CASES:
        times, result = [], None
        for _ in range(REPEAT):
            start = time.perf_counter()
            result = _native.plan.plan(**kw, top=1)
            times.append(time.perf_counter() - start)
        t = statistics.median(times)
        best = result["layouts"][0] if result["layouts"] else None
        shape = (
            f"{best['mesh_shape']} {best['mesh_axes']} mb{best['micro_batch']} {best['checkpointing']}"
            if best
            else "none fits"
        )
        print(
            f"{name:<36} {t:>9.3f} {result['evaluated']:>8} {result.get('pruned', 0):>7} "
            f"{result['evaluated'] / t:>10.0f} "
            f"{result['placement_searches']:>19}  {shape}"
        )
    cmd = [
        sys.executable,
        "-m",
        "vtrn.cli",
        "plan",
        "--model",
        "llama3-70b",
        "--nodes",
        "64",
        "--seq",
        "8192",
    ]
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    print(
        f"\n`vtrn plan --model llama3-70b --nodes 64 --seq 8192` end to end: {statistics.median(times):.3f} s (target < 1 s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
