"""torch.compile(backend="neuron"): one module per graph, TorchNeuron's failure modes, the cache."""

import os
import sys

import pytest
import torch
from conftest import run_python

import vtrn
from vtrn.compile import get_dynamo_metrics, graph_modules, reset_dynamo_metrics

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
sys.path.insert(0, EXAMPLES)
import llama_step  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    reset_dynamo_metrics()
    vtrn.clear_op_tracking()
    yield
    torch._dynamo.reset()


def train_losses(compiled, steps=3):
    """Losses of |steps| Llama steps (forward and backward through the model, AdamW outside)."""
    size = llama_step.resolve_size("tiny")
    model = llama_step.make_model("neuron", torch.float32, size)
    opt = llama_step.make_optimizer(model)

    def loss_of(tokens, targets):
        return llama_step.loss_fn(model(tokens), targets)

    if compiled:
        loss_of = torch.compile(loss_of, backend="neuron", fullgraph=True, dynamic=False)
    losses = []
    for i in range(steps):
        tokens, targets = llama_step.batch(i, size)
        opt.zero_grad(set_to_none=True)
        loss = loss_of(tokens.to("neuron"), targets.to("neuron"))
        loss.backward()
        opt.step()
        losses.append(loss.detach().cpu())
    return torch.stack(losses)


def test_llama_step_is_one_forward_and_one_backward_module_and_matches_eager():
    eager = train_losses(compiled=False)
    vtrn.clear_op_tracking()
    compiled = train_losses(compiled=True)
    assert vtrn.get_fallback_ops() == []
    modules = graph_modules()
    assert sorted(modules.values()) == [1, 1], modules
    assert any("forward" in n for n in modules) and any("backward" in n for n in modules)
    metrics = get_dynamo_metrics()
    assert metrics["graphs"] == 1 and metrics["fallbacks"] == 0
    torch.testing.assert_close(compiled, eager)


def test_each_batch_size_compiles_once():
    f = torch.compile(lambda x, w: torch.relu(x @ w).sum(1), backend="neuron", dynamic=False)
    w = torch.randn(8, 4)
    for b in (2, 3, 5, 3, 2):
        x = torch.randn(b, 8)
        torch.testing.assert_close(
            f(x.to("neuron"), w.to("neuron")).cpu(), torch.relu(x @ w).sum(1)
        )
    m = get_dynamo_metrics()
    assert m["graphs"] == 3
    assert m["compiles"] + m["cache_hits"] == 3


def test_unlowerable_op_fails_by_default_naming_it_and_runs_with_fallback_execution():
    def f(x):
        return torch.atan(x) * 2

    x = torch.randn(6)
    with pytest.raises(RuntimeError, match=r"atan[\s\S]*fallback_execution"):
        torch.compile(f, backend="neuron")(x.to("neuron"))
    torch._dynamo.reset()
    g = torch.compile(f, backend="neuron", options={"fallback_execution": True})
    torch.testing.assert_close(g(x.to("neuron")).cpu(), torch.atan(x) * 2)
    assert get_dynamo_metrics()["fallbacks"] >= 1


def test_symbolic_shapes_get_torchneuron_error():
    f = torch.compile(lambda x: x * 2, backend="neuron", dynamic=True)
    with pytest.raises(RuntimeError, match="Dynamic shapes detected in the model"):
        f(torch.randn(5, device="neuron"))


def test_unknown_option_names_it():
    f = torch.compile(lambda x: x * 2, backend="neuron", options={"fallbak_execution": True})
    with pytest.raises(RuntimeError, match="fallbak_execution"):
        f(torch.randn(3, device="neuron"))


SCRIPT = """
import torch, vtrn.compile as c
f = torch.compile(lambda x, w: (torch.tanh(x @ w) * 3).sum(), backend="neuron", dynamic=False)
x = torch.arange(12.0).reshape(3, 4) / 10
w = torch.ones(4, 2)
print(float(f(x.to("neuron"), w.to("neuron"))), float((torch.tanh(x @ w) * 3).sum()))
m = c.get_dynamo_metrics()
print(m["graphs"], m["compiles"], m["cache_hits"])
"""


def test_second_process_compiles_nothing(tmp_path):
    # A plain `import torch` finds the backend through the torch_dynamo_backends entry point.
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path))
    runs = [run_python(SCRIPT, env=env) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    (got0, want0), (got1, want1) = [[float(v) for v in r.stdout.split()[:2]] for r in runs]
    assert got0 == pytest.approx(want0, rel=1e-5) and got1 == pytest.approx(want1, rel=1e-5)
    first = [int(v) for v in runs[0].stdout.split()[2:]]
    second = [int(v) for v in runs[1].stdout.split()[2:]]
    assert first == [1, 1, 0]
    assert second == [1, 0, 1]
