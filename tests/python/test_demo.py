"""The main job (`make demo`): MLP losses on neuron match the CPU's within 1e-5 relative."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_mlp.py"


def test_demo_losses_match_cpu():
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--steps", "20"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == 20
    for step, neuron, cpu, _ in rows:
        assert float(neuron) == pytest.approx(float(cpu), rel=1e-5), step
    assert "within 1e-05" in result.stdout
