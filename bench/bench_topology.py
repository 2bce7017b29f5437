"""Times of `vtrn mesh` on a 4,096-rank mesh (64 trn2.48xlarge nodes) and of the placement
search for one node. Targets: under 1 s and under 2 s.

Run: python bench/bench_topology.py
Each figure is the median of several runs; the command is timed end to end as a fresh process
(interpreter start included), like a user typing it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

REPEAT = 5
MESH_4096 = ["mesh", "--shape", "64,16,4", "--names", "replicate,shard,tp", "--nodes", "64"]
SEARCHES = [
    ("TP8 x FSDP8 @ LNC2", 2, [8, 8]),
    ("TP32 x DP2  @ LNC2", 2, [2, 32]),
    ("TP16 x DP8  @ LNC1", 1, [8, 16]),
]


def median_time(fn, repeat=REPEAT):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_cli(argv):
    proc = subprocess.run([sys.executable, "-m", "vtrn.cli", *argv], capture_output=True, text=True)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"vtrn {' '.join(argv)} failed ({proc.returncode}): {proc.stderr}")


def main() -> int:
    from vtrn.topology import Cluster

    print("vtrn topology bench (median of %d runs)" % REPEAT)
    t_text = median_time(lambda: run_cli(MESH_4096))
    t_json = median_time(lambda: run_cli(MESH_4096 + ["--json"]))
    cluster = Cluster("trn2.48xlarge", 2, 64)
    t_model = median_time(lambda: cluster.analyze_mesh([64, 16, 4], ["replicate", "shard", "tp"]))
    print(
        f"vtrn mesh, 4,096 ranks on 64 nodes, text : {t_text:.3f} s  ({t_text / 1.0:.2f} of the 1 s target)"
    )
    print(
        f"vtrn mesh, 4,096 ranks on 64 nodes, --json: {t_json:.3f} s  ({t_json / 1.0:.2f} of the 1 s target)"
    )
    print(f"  of which the model (Cluster.analyze_mesh): {t_model:.4f} s")
    worst = 0.0
    for label, lnc, shape in SEARCHES:
        c = Cluster("trn2.48xlarge", lnc, 1)
        results = []
        t = median_time(lambda: results.append(c.search_placement(shape, ["dp", "tp"])))
        worst = max(worst, t)
        result = results[-1]
        status = "found" if result.found else "NOT FOUND"
        print(
            f"placement search {label}: {t:.3f} s  ({t / 2.0:.2f} of the 2 s target), {status}, "
            f"{result.solutions} placements compared, {result.steps} steps"
        )
    t_auto = median_time(
        lambda: run_cli(["mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", "auto"])
    )
    print(
        f"vtrn mesh --placement auto, TP8 x FSDP8  : {t_auto:.3f} s  ({t_auto / 2.0:.2f} of the 2 s target)"
    )
    ok = t_text < 1.0 and t_json < 1.0 and worst < 2.0 and t_auto < 2.0
    print("targets met" if ok else "TARGETS MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
