import subprocess
import sys
import textwrap

import pytest
import torch

import vtrn

# A broken build must fail the suite, not turn into skips: autoload only warns when the device
# cannot be registered (so that `import torch` keeps working), and a test module that finds a
# piece missing could skip itself. register() raises the real error instead, and every native
# extension must load.
vtrn.register()
assert torch._C._get_privateuse1_backend_name() == "neuron", "vtrn did not register 'neuron'"
from vtrn import _C, _native  # noqa: E402

assert hasattr(_C, "_native_ops"), "vtrn._C has no _native_ops(): rebuild with `make install`"
for _extension in ("model", "hlo", "plan"):
    getattr(_native, _extension)  # raises NativeModuleMissing, naming the extension


@pytest.fixture
def clean_tracking():
    """Op tracking starts empty, so each test sees only the ops it ran."""
    vtrn.clear_op_tracking()
    yield
    vtrn.clear_op_tracking()


@pytest.fixture
def fresh_dynamo():
    """Dynamo's caches, the neuron backend's counters and op tracking reset around a test."""
    import torch._dynamo

    from vtrn.compile import reset_dynamo_metrics

    torch._dynamo.reset()
    reset_dynamo_metrics()
    vtrn.clear_op_tracking()
    yield
    torch._dynamo.reset()


def run_python(code: str, env=None, timeout=120) -> subprocess.CompletedProcess:
    """Runs |code| in a fresh interpreter and returns the finished process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
