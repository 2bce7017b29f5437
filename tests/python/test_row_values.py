"""A per-row value broadcast along its rows (x - x.amax(-1, keepdim=True), a softmax's sum, a
norm's scale) combined with the tensor it came from: fused loops read the row value one scalar
per row instead of filling a chunk with it. Each result must equal the CPU's bit for bit, with
the row value on either side, eager subtract's alpha (lowered to an fma), rows shorter and
longer than a chunk, and Adaptive Eager Execution off (in this process) and on (in a fresh one:
the variable is read at startup). The cases are in row_value_cases.py."""

import json
import os
import pathlib
import subprocess
import sys

import row_value_cases

import vtrn  # noqa: F401  (registers the neuron device)

HERE = pathlib.Path(__file__).parent


def test_row_values_match_cpu_with_aee_off():
    assert row_value_cases.mismatches("neuron") == []


def test_row_values_match_cpu_with_aee_on():
    script = "import json, vtrn, row_value_cases\nprint(json.dumps(row_value_cases.mismatches('neuron')))"
    env = dict(os.environ, TORCH_NEURONX_ENABLE_CONCATENATION="1")
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
