import subprocess
import sys
import textwrap

import pytest

import vtrn


@pytest.fixture
def clean_tracking():
    """Op tracking starts empty, so each test sees only the ops it ran."""
    vtrn.clear_op_tracking()
    yield
    vtrn.clear_op_tracking()


def run_python(code: str, env=None, timeout=120) -> subprocess.CompletedProcess:
    """Runs |code| in a fresh interpreter and returns the finished process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
