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


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and bits (so -0.0 differs from 0.0, and NaNs compare), for float32
    and 2-byte floats (bfloat16, float16)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    view = torch.int32 if a.element_size() == 4 else torch.int16
    return torch.equal(a.contiguous().view(view), b.contiguous().view(view))


def assert_trains_to_cpu_parameters(cpu_model, inputs: dict, steps: int = 3):
    """Trains |cpu_model| and a copy of it on `neuron` for |steps| AdamW steps on |inputs| (the
    model's keyword arguments, labels included) and asserts every parameter is the CPU's bits."""
    import copy

    dev_model = copy.deepcopy(cpu_model).to("neuron")
    for model, device in ((cpu_model, "cpu"), (dev_model, "neuron")):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for _ in range(steps):
            model(**{k: v.to(device) for k, v in inputs.items()}).loss.backward()
            opt.step()
            opt.zero_grad()
    for (name, a), b in zip(cpu_model.named_parameters(), dev_model.parameters()):
        assert bits_equal(b.detach().cpu(), a.detach()), name


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    """Runs the test with torch.set_num_threads(1), then (2)."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


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
