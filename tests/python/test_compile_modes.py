"""torch.compile(backend="neuron"): mutated inputs, random ops, compile-only mode and the
per-graph records TorchNeuron's metrics API reads."""

import json
import os

import pytest
import torch
from conftest import run_python

import vtrn
from vtrn.compile import get_dynamo_metrics, graph_modules, reset_dynamo_metrics

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def make_bn_model(device):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 1)
    ).to(device)


def test_batch_norm_running_stats_are_written_back_inside_the_module():
    # Reference: the same model trained eagerly on the CPU.
    ref, model = make_bn_model("cpu"), make_bn_model("neuron")
    step = torch.compile(lambda x: model(x).square().mean(), backend="neuron", dynamic=False)
    for i in range(3):
        x = torch.randn(5, 6, generator=torch.Generator().manual_seed(i))
        want = ref(x).square().mean()
        want.backward()
        got = step(x.to("neuron"))
        got.backward()
        torch.testing.assert_close(got.cpu(), want.detach())
    bn_ref, bn = ref[1], model[1]
    torch.testing.assert_close(bn.running_mean.cpu(), bn_ref.running_mean)
    torch.testing.assert_close(bn.running_var.cpu(), bn_ref.running_var)
    assert int(bn.num_batches_tracked) == 3
    torch.testing.assert_close(model[0].weight.grad.cpu(), ref[0].weight.grad)
    # The write-back is part of the forward module: one executable per graph.
    assert sorted(graph_modules().values()) == [1, 1], graph_modules()
    assert vtrn.get_fallback_ops() == []


def test_in_place_update_of_an_input_is_written_back():
    def f(x, y):
        x.mul_(2).add_(y)
        return (x * 3).sum(1)

    x, y = torch.randn(4, 5), torch.randn(4, 5)
    want_x = x.clone()
    want = f(want_x, y)
    xd = x.to("neuron")
    got = torch.compile(f, backend="neuron", fullgraph=True)(xd, y.to("neuron"))
    torch.testing.assert_close(got.cpu(), want)
    torch.testing.assert_close(xd.cpu(), want_x)
    assert list(graph_modules().values()) == [1], graph_modules()


def views_of_results(x, w):
    """Views of results computed inside the graph: q/k/v thirds of one projection, rotary
    halves, a transposed slice, a step slice, an offset diagonal, an expanded row."""
    y = x @ w  # [4, 6, 24]
    q, k, v = y.split(8, dim=-1)
    half = q[..., :4], q[..., 4:]
    rot = torch.cat((-half[1], half[0]), dim=-1)
    kt = k[:, 1:5].transpose(1, 2)  # [4, 8, 4]
    step = v[:, ::2, 1::3]  # [4, 3, 3]
    diag = y[0].as_strided((5,), (25,), 1)  # elements (i, i + 1) of y[0] (rows of 24)
    row = y[:, :1, 2:5].expand(4, 6, 3)
    return (
        (rot * 2).sum(),
        (kt + 1).sum(-1),
        (step * step).sum(),
        (diag + 0).sum(),
        (row * v[..., :3]).sum(1),
    )


def test_views_of_results_inside_the_graph_match_cpu():
    x = torch.randn(4, 6, 5, generator=torch.Generator().manual_seed(0))
    w = torch.randn(5, 24, generator=torch.Generator().manual_seed(1))
    want = views_of_results(x, w)
    got = torch.compile(views_of_results, backend="neuron", fullgraph=True, dynamic=False)(
        x.to("neuron"), w.to("neuron")
    )
    for g, e in zip(got, want, strict=True):
        torch.testing.assert_close(g.cpu(), e)
    assert list(graph_modules().values()) == [1], graph_modules()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compiled_dropout_equals_eager_under_the_same_seed(dtype):
    drop = torch.nn.Dropout(0.5)

    def f(x):
        return drop(x * 2).sum(0)

    x = torch.randn(64, 32, device="neuron", dtype=dtype, requires_grad=True)
    torch.manual_seed(123)
    want = f(x)
    want.sum().backward()
    want_grad, x.grad = x.grad.clone(), None
    want_state = torch.neuron.get_rng_state()
    torch.manual_seed(123)
    got = torch.compile(f, backend="neuron", fullgraph=True)(x)
    got.sum().backward()
    torch.testing.assert_close(got.cpu(), want.detach().cpu())
    torch.testing.assert_close(x.grad.cpu(), want_grad.cpu())
    # The compiled graph advanced the generator exactly as eager mode did.
    assert torch.equal(torch.neuron.get_rng_state(), want_state)
    # The mask is drawn inside the module: one forward and one backward executable.
    assert sorted(graph_modules().values()) == [1, 1], graph_modules()
    # A different seed draws a different mask.
    torch.manual_seed(124)
    other = torch.compile(f, backend="neuron", fullgraph=True)(x)
    assert not torch.equal(other.detach().cpu(), want.detach().cpu())
    # About half the elements are dropped, each kept one scaled by 2 (eager's own rule).
    kept = (drop.train()(torch.ones(4096, device="neuron")) != 0).float().mean().item()
    assert 0.45 < kept < 0.55


def random_draws(x):
    """rand, randn and bernoulli between ordinary ops: each draw reserves its own range."""
    u = torch.rand_like(x)
    n = torch.randn(x.shape[0], 7, device=x.device, dtype=x.dtype)
    b = torch.bernoulli(torch.empty_like(x), 0.25)
    return x * u + 1, n.exp(), b * x, torch.nn.functional.dropout(x, 0.1) - u


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compiled_random_ops_draw_eagers_numbers_in_one_module(dtype):
    x = torch.randn(9, 5, generator=torch.Generator().manual_seed(0)).to("neuron", dtype)
    torch.manual_seed(7)
    want = random_draws(x)
    want_state = torch.neuron.get_rng_state()
    torch.manual_seed(7)
    got = torch.compile(random_draws, backend="neuron", fullgraph=True, dynamic=False)(x)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.cpu(), w.cpu(), rtol=0, atol=0)
    assert torch.equal(torch.neuron.get_rng_state(), want_state)
    assert list(graph_modules().values()) == [1], graph_modules()
    # The draws are random: bernoulli(0.25) keeps about a quarter (of 45, at least 3).
    assert 3 <= int(got[2].ne(0).sum()) <= 25


def test_compile_only_context_fills_sentinels_and_runs_no_kernel():
    import torch_neuronx

    x = torch.arange(6.0).to("neuron")
    i = torch.arange(6).to("neuron")
    vtrn.reset_metrics()
    with torch_neuronx.compiler.compile_only():
        assert torch_neuronx.compiler.is_compile_only()
        y = torch.exp(x) + 1
        j = i * 3
        torch.neuron.synchronize()
    assert not torch_neuronx.compiler.is_compile_only()
    m = vtrn.metrics()
    assert m["executed_kernels"] == 0 and m["skipped_kernels"] >= 2
    assert torch.isnan(y.cpu()).all()
    assert (j.cpu() == 4).all()
    # Outside the context the same ops run (from the cache) and give the CPU's values.
    torch.testing.assert_close((torch.exp(x) + 1).cpu(), torch.exp(torch.arange(6.0)) + 1)
    assert vtrn.metrics()["executed_kernels"] >= 1


COMPILE_ONLY_SCRIPT = """
import json, torch, vtrn
from vtrn.compile import get_dynamo_metrics
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
x = torch.randn(3, 8)
want = model(x).softmax(-1)
model = model.to("neuron")
step = torch.compile(lambda x: model(x).softmax(-1), backend="neuron", dynamic=False)
vtrn.reset_metrics()
got = step(x.to("neuron")).cpu()
eager = (model(x.to("neuron")) * 2).cpu()
m, d = vtrn.metrics(), get_dynamo_metrics()
print(json.dumps({
    "close": bool(torch.allclose(got, want, atol=1e-6)),
    "nan": bool(torch.isnan(got).all() and torch.isnan(eager).all()),
    "compiles": m["compiles"], "executed": m["executed_kernels"],
    "skipped": m["skipped_kernels"], "graph_compiles": d["compiles"],
}))
"""


def test_compile_only_run_fills_the_cache_and_the_next_run_compiles_nothing(tmp_path):
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path))
    env.pop("TORCH_NEURONX_COMPILE_ONLY", None)
    warm = run_python(COMPILE_ONLY_SCRIPT, env=dict(env, TORCH_NEURONX_COMPILE_ONLY="1"))
    assert warm.returncode == 0, warm.stderr
    w = json.loads(warm.stdout.splitlines()[-1])
    assert w["nan"] and not w["close"]
    assert w["executed"] == 0 and w["skipped"] > 0 and w["compiles"] > 0
    assert w["graph_compiles"] == 1
    run = run_python(COMPILE_ONLY_SCRIPT, env=env)
    assert run.returncode == 0, run.stderr
    r = json.loads(run.stdout.splitlines()[-1])
    assert r["close"] and not r["nan"]
    assert r["compiles"] == 0 and r["graph_compiles"] == 0 and r["executed"] > 0


RECORDS_SCRIPT = """
import sys, torch
f = torch.compile(lambda x: (x.sin() * 2).sum(), backend="neuron")
print(float(f(torch.ones(4, device="neuron"))))
print("torch_neuronx" in sys.modules)
import torch_neuronx
records = torch_neuronx.get_dynamo_metrics()
print(len(records), records[0].graph_name, records[0].graph_node_count > 0)
"""


def test_torch_neuronx_reads_the_backends_records_and_vtrn_never_imports_it():
    r = run_python(RECORDS_SCRIPT)
    assert r.returncode == 0, r.stderr
    value, imported, records = r.stdout.splitlines()
    assert float(value) == pytest.approx(4 * 2 * torch.sin(torch.tensor(1.0)).item())
    assert imported == "False"
    count, name, has_nodes = records.split()
    assert count == "1" and "inference" in name and has_nodes == "True"


def test_records_follow_each_compiled_graph():
    import torch_neuronx

    torch_neuronx.reset_dynamo_metrics()
    f = torch.compile(lambda x, w: (x @ w).relu().sum(), backend="neuron")
    w = torch.randn(4, 3, device="neuron", requires_grad=True)
    f(torch.randn(2, 4, device="neuron"), w).backward()
    names = [r.graph_name for r in torch_neuronx.get_dynamo_metrics()]
    assert len(names) == 2
    assert any("forward" in n for n in names) and any("backward" in n for n in names)
    assert get_dynamo_metrics()["graphs"] == 1
    reset_dynamo_metrics()
    assert torch_neuronx.get_dynamo_metrics() == []
