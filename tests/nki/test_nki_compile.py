"""NKI kernels inside torch.compile(backend="neuron") graphs: an nki_op and a wrap_nki call are
one `custom_call @vtrn.nki` in the graph's single module (no graph break, one executable), the
results equal eager mode's and PyTorch's, the module's modeled time includes the kernel's, and
a model whose RMSNorm is an nki_op with an NKI backward trains under compile with PyTorch's
losses."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch._dynamo
from rmsnorm_op import reference_rmsnorm, rmsnorm, train_beside_pytorch
from sample_loader import load_sample

import neuronxcc.nki.language as nl
import nki
import vtrn
from nki._native import native
from torch_neuronx import wrap_nki
from vtrn.compile import get_dynamo_metrics, graph_modules, records, reset_dynamo_metrics

DEV = "neuron"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    reset_dynamo_metrics()
    yield
    torch._dynamo.reset()


def test_nki_op_is_one_custom_call_in_one_module():
    def f(x, g):
        return rmsnorm(x * 2.0, g) + 1.0

    torch.manual_seed(0)
    x, g = torch.randn(200, 256), torch.rand(256)
    explanation = torch._dynamo.explain(f)(x.to(DEV), g.to(DEV))
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    torch._dynamo.reset()

    compiled = torch.compile(f, backend="neuron", fullgraph=True)
    out = compiled(x.to(DEV), g.to(DEV)).cpu()
    eager = f(x.to(DEV), g.to(DEV)).cpu()
    torch.testing.assert_close(out, eager, rtol=0, atol=0)  # the same interpreter runs both
    torch.testing.assert_close(out, reference_rmsnorm(x * 2.0, g) + 1.0, rtol=1e-5, atol=1e-5)

    # One Dynamo graph, one forward (inference) module, and that module is one executable.
    recorded = records.get_dynamo_metrics()
    assert len(recorded) == 1, recorded
    assert list(graph_modules().values()) == [1], graph_modules()
    m = get_dynamo_metrics()
    assert m["graphs"] == 1 and m["fallbacks"] == 0


def test_the_module_holds_the_kernel_and_its_modeled_time(tmp_path, monkeypatch):
    from nki import _torch_hop

    x, g = torch.randn(256, 512), torch.rand(512)
    # The kernel's own modeled latency, from an eager launch (no torch.compile involved).
    rmsnorm(x.to(DEV), g.to(DEV)).cpu()
    latency_us = nki.last_run().latency_us
    assert latency_us > 0

    compiled = torch.compile(lambda x, g: rmsnorm(x, g), backend="neuron", fullgraph=True)
    xd, gd = x.to(DEV), g.to(DEV)
    compiled(xd, gd).cpu()  # compiles
    torch.neuron.synchronize()
    before = vtrn.metrics()
    out = compiled(xd, gd)
    torch.neuron.synchronize()
    after = vtrn.metrics()
    torch.testing.assert_close(out.cpu(), reference_rmsnorm(x, g), rtol=1e-5, atol=1e-5)
    assert after["executed_kernels"] - before["executed_kernels"] == 1
    modeled_us = after["modeled_device_time_us"] - before["modeled_device_time_us"]
    # The module is the kernel alone: its modeled time is the kernel's schedule (the metric
    # counts picoseconds).
    assert modeled_us == pytest.approx(latency_us, abs=1e-5)

    # The call names a registered program by a content hash of its instructions.
    keys = [k for k in _torch_hop._registered.values() if k is not None]
    assert keys
    entry = native.registered_kernel(keys[-1])
    assert entry is not None and abs(entry["latency_s"] * 1e6 - latency_us) < 1e-6
    assert entry["backend_config"].startswith(f"kernel={keys[-1]};latency_s=")

    # The op also runs on cpu tensors (the CPU fallback's path), through the same program.
    (y,) = torch.ops.vtrn.nki_call([x, g], keys[-1])
    torch.testing.assert_close(y, reference_rmsnorm(x, g), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="no NKI kernel is registered as nope"):
        torch.ops.vtrn.nki_call([x, g], "nope")
    with pytest.raises(ValueError, match="operand 0 has 262144 bytes, the kernel's tensor has"):
        torch.ops.vtrn.nki_call([x[:128], g], keys[-1])


CACHE_SCRIPT = """
import sys
import torch
sys.path.insert(0, sys.argv[1])
from rmsnorm_op import rmsnorm
import vtrn.compile as c
torch.manual_seed(0)
x, g = torch.randn(200, 256), torch.rand(256)
f = torch.compile(lambda x, g: rmsnorm(x, g) * 2.0, backend="neuron", fullgraph=True)
got = f(x.to("neuron"), g.to("neuron")).cpu()
want = torch.nn.functional.rms_norm(x, (256,), g, eps=1e-6) * 2.0
assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
m = c.get_dynamo_metrics()
print(m["compiles"], m["cache_hits"], list(c.graph_modules().values()))
"""


def test_a_module_with_a_kernel_is_reused_from_the_disk_cache_by_another_process(tmp_path):
    """The second process loads the executable its first run stored: it traces the kernel for
    the graph's shapes first, which registers the program the cached module names."""
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path))
    here = str(Path(__file__).parent)
    runs = [
        subprocess.run(
            [sys.executable, "-c", CACHE_SCRIPT, here],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )  # fmt: skip
        for _ in range(2)
    ]
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    assert runs[0].stdout.split() == ["1", "0", "[1]"]
    assert runs[1].stdout.split() == ["0", "1", "[1]"]


def add_into(x, y, out):
    """Writes x + y into |out| (an input the kernel mutates) and returns x * y."""
    prod = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tx, ty = nl.load(x), nl.load(y)
    nl.store(out, nl.add(tx, ty))
    nl.store(prod, nl.multiply(tx, ty))
    return prod


def test_wrap_nki_with_a_mutated_input_is_one_module():
    kernel = wrap_nki(nki.jit(add_into))

    def f(x, y):
        out = torch.zeros_like(x)
        prod = kernel(x, y, out)
        return prod - out

    x, y = torch.rand(64, 128), torch.rand(64, 128)
    explanation = torch._dynamo.explain(f)(x.to(DEV), y.to(DEV))
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="neuron", fullgraph=True)
    out = compiled(x.to(DEV), y.to(DEV)).cpu()
    torch.testing.assert_close(out, x * y - (x + y))
    assert list(graph_modules().values()) == [1], graph_modules()


def test_a_jit_kernel_called_directly_is_one_module():
    kernel = nki.jit(add_into)

    def f(x, y):
        out = torch.zeros_like(x)
        prod = kernel(x, y, out)  # updates `out` in place, as in eager mode
        return prod * out

    x, y = torch.rand(64, 128), torch.rand(64, 128)
    explanation = torch._dynamo.explain(f)(x.to(DEV), y.to(DEV))
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="neuron", fullgraph=True)
    out = compiled(x.to(DEV), y.to(DEV)).cpu()
    torch.testing.assert_close(out, (x * y) * (x + y))
    assert list(graph_modules().values()) == [1], graph_modules()


def test_a_legacy_sample_on_a_grid_is_one_module():
    sample = load_sample("tensor_addition_legacy")

    def f(a, b):
        return wrap_nki(sample.nki_tensor_add_kernel_)[2, 2](a * 3.0, b) - 1.0

    a, b = torch.rand(256, 1024), torch.rand(256, 1024)
    compiled = torch.compile(f, backend="neuron", fullgraph=True)
    out = compiled(a.to(DEV), b.to(DEV)).cpu()
    torch.testing.assert_close(out, a * 3.0 + b - 1.0)
    assert list(graph_modules().values()) == [1], graph_modules()


def test_training_through_the_nki_rmsnorm_under_compile_matches_pytorch():
    losses, ref_losses = train_beside_pytorch(
        6, lambda net: torch.compile(net, backend="neuron", fullgraph=True)
    )
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    assert losses[-1] < losses[0]
    # One forward and one backward module, each one executable holding its NKI kernel.
    names = [r.graph_name for r in records.get_dynamo_metrics()]
    assert len(names) == 2 and "forward" in names[0] and "backward" in names[1], names
    assert sorted(graph_modules().values()) == [1, 1], graph_modules()
    assert get_dynamo_metrics()["fallbacks"] == 0
