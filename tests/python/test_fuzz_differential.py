"""Differential fuzzing of `neuron` against the CPU (fuzz_differential.py).

Seeded random op programs (non-contiguous views, broadcasting, zero-size tensors, in-place ops
on views, dtype promotion from bool to complex64, integer overflow, NaN/inf, reductions up to
10^7 elements) run on both devices, with Adaptive Eager Execution off and on, in 1 and 4
Python threads. Each mode runs in its own process (the AEE setting is read at startup) with a
fixed seed range, so a failure is reproducible, and stops starting programs after a time
budget. A failure prints each mismatch's seed and minimal reproducer.

VTRN_FUZZ_SEEDS (programs per mode, default 100) and VTRN_FUZZ_SECONDS (budget per mode,
default 15) make a longer run. Known bugs (fuzz_known.py) are kept out of the programs; each
known bug's reproducer must still fail here, so fixing one means removing its entry.
"""

import json
import os
import subprocess
import sys
import warnings

import pytest
from fuzz_differential import reproducer_mismatch
from fuzz_known import KNOWN_FAILURES

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = int(os.environ.get("VTRN_FUZZ_SEEDS", "100"))
SECONDS = float(os.environ.get("VTRN_FUZZ_SECONDS", "15"))


def run_fuzzer(tmp_path, aee: bool, threads: int, first_seed: int, count: int, *extra) -> dict:
    env = dict(os.environ)
    env["TORCH_NEURONX_ENABLE_CONCATENATION"] = "1" if aee else "0"
    env["TORCH_NEURONX_NEFF_CACHE_DIR"] = str(tmp_path / "neff")
    cmd = [
        sys.executable,
        os.path.join(HERE, "fuzz_differential.py"),
        "--seeds",
        f"{first_seed}:{first_seed + count}",
        "--threads",
        str(threads),
        "--seconds",
        str(SECONDS),
        *extra,
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=SECONDS + 240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def report(summary: dict) -> str:
    lines = [
        f"{len(summary['findings'])} mismatch(es), AEE {'on' if summary['aee'] else 'off'}, "
        f"{summary['threads']} thread(s), seeds {summary['seeds']}:"
    ]
    for f in summary["findings"]:
        lines.append(f"\n--- seed {f['seed']}: {f['kind']} ({f.get('feature')})")
        if f.get("only_in_threads"):
            lines.append("(does not reproduce in one thread; the program as run:)")
        lines.append(f.get("reproducer", f["detail"]))
    return "\n".join(lines)


@pytest.mark.parametrize(
    "aee,threads,first_seed",
    [(False, 1, 0), (False, 4, 100_000), (True, 1, 200_000), (True, 4, 300_000)],
    ids=["eager-1thread", "eager-4threads", "aee-1thread", "aee-4threads"],
)
def test_random_programs_match_cpu(tmp_path, aee, threads, first_seed):
    summary = run_fuzzer(tmp_path, aee, threads, first_seed, SEEDS)
    assert summary["programs"] > 0
    assert not summary["findings"], report(summary)
    if aee:
        # The mode did what it is for: elementwise chains ran as fused groups.
        assert summary["fused_groups"] > 0


def test_large_reductions_match_cpu(tmp_path):
    summary = run_fuzzer(
        tmp_path, False, 1, 400_000, max(SEEDS // 20, 4), "--large", "--max-stmts", "3"
    )
    assert summary["programs"] > 0
    assert not summary["findings"], report(summary)


# An entry without a reproducer program (a thread race) is attributed by the fuzzer itself.
CHECKABLE = [k for k in KNOWN_FAILURES if k.reproducer]


@pytest.mark.parametrize("known", CHECKABLE, ids=[k.id for k in CHECKABLE])
def test_known_failure_still_fails(known):
    """A known bug's reproducer still differs from the CPU. When this fails, the bug is
    fixed: remove its entry from fuzz_known.py so the fuzzer covers that feature again."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mismatch = reproducer_mismatch(known.reproducer)
    assert mismatch is not None, (
        f"{known.id} now matches the CPU: remove it from tests/python/fuzz_known.py"
    )
