"""torch.compile(backend="neuron"): one module per graph, TorchNeuron's failure modes, the cache."""

import copy
import os
import sys

import pytest
import torch
from conftest import run_python

import vtrn
from vtrn.compile import get_dynamo_metrics, graph_modules

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
sys.path.insert(0, EXAMPLES)
import llama_step  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def train_losses(compiled, autocast=False, steps=10):
    """Losses of |steps| Llama steps (forward and backward through the model, AdamW outside),
    the forward under bfloat16 autocast when |autocast|."""
    size = llama_step.resolve_size("tiny")
    model = llama_step.make_model("neuron", torch.float32, size)
    opt = llama_step.make_optimizer(model)

    def loss_of(tokens, targets):
        with torch.autocast("neuron", dtype=torch.bfloat16, enabled=autocast):
            logits = model(tokens)
        return llama_step.loss_fn(logits, targets)

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


@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16-autocast"])
def test_llama_step_is_one_forward_and_one_backward_module_and_matches_eager(autocast):
    eager = train_losses(compiled=False, autocast=autocast)
    vtrn.clear_op_tracking()
    compiled = train_losses(compiled=True, autocast=autocast)
    assert vtrn.get_fallback_ops() == []
    modules = graph_modules()
    assert sorted(modules.values()) == [1, 1], modules
    assert any("forward" in n for n in modules) and any("backward" in n for n in modules)
    metrics = get_dynamo_metrics()
    assert metrics["graphs"] == 1 and metrics["fallbacks"] == 0
    torch.testing.assert_close(compiled, eager)
    # The reference itself is the CPU's: eager neuron follows it (bf16 within bf16's precision).
    cpu = torch.tensor(llama_step.train("cpu", torch.float32, 10, clip=0)) if not autocast else None
    if cpu is not None:
        torch.testing.assert_close(compiled, cpu, rtol=1e-4, atol=1e-4)


def test_complex_rotary_trains_compiled_with_no_fallback_as_on_the_cpu():
    """torchtitan's rotary embedding: view_as_complex(x) * a polar() table. Its backward clones
    a complex64 gradient, which the module copies as float32 pairs."""

    def rotary(x, table):
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(pairs * table).flatten(-2).type_as(x)

    torch.manual_seed(0)
    x = torch.randn(2, 8, 4, 16, requires_grad=True)
    table = torch.polar(torch.ones(8, 1, 8), torch.randn(8, 1, 8))
    grad = torch.randn(2, 8, 4, 16)
    expected = rotary(x, table)
    expected.backward(grad)
    vtrn.clear_op_tracking()
    dev = x.detach().to("neuron").requires_grad_()
    out = torch.compile(rotary, backend="neuron", fullgraph=True)(dev, table.to("neuron"))
    out.backward(grad.to("neuron"))
    assert vtrn.get_fallback_ops() == []
    assert sorted(graph_modules().values()) == [1, 1], graph_modules()
    torch.testing.assert_close(out.cpu(), expected)
    torch.testing.assert_close(dev.grad.cpu(), x.grad)


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


BATCH_SIZES_SCRIPT = """
import torch, vtrn.compile as c
f = torch.compile(lambda x, w: torch.relu(x @ w).sum(1), backend="neuron", dynamic=False)
w = torch.randn(8, 4)
for b in (2, 3, 5, 3, 2, 5):
    x = torch.randn(b, 8)
    got = f(x.to("neuron"), w.to("neuron")).cpu()
    assert torch.allclose(got, torch.relu(x @ w).sum(1), atol=1e-5), (got, b)
m = c.get_dynamo_metrics()
print(m["graphs"], m["compiles"], m["cache_hits"])
"""


def test_three_batch_sizes_give_exactly_three_compiles(tmp_path):
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path))
    r = run_python(BATCH_SIZES_SCRIPT, env=env)
    assert r.returncode == 0, r.stderr
    assert [int(v) for v in r.stdout.split()] == [3, 3, 0]


def hf_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def hf_train_losses(device, compiled, steps=3):
    model = hf_llama().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    forward = (
        torch.compile(model, backend="neuron", fullgraph=True, dynamic=False) if compiled else model
    )
    losses = []
    for i in range(steps):
        ids = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(i))
        opt.zero_grad()
        loss = forward(input_ids=ids.to(device), labels=ids.to(device)).loss
        loss.backward()
        opt.step()
        losses.append(loss.detach().cpu())
    return torch.stack(losses)


def test_hf_llama_training_step_compiles_to_two_modules_and_matches_eager():
    eager = hf_train_losses("neuron", compiled=False)
    vtrn.clear_op_tracking()
    compiled = hf_train_losses("neuron", compiled=True)
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(
        compiled, hf_train_losses("cpu", compiled=False), rtol=1e-4, atol=1e-4
    )
    assert vtrn.get_fallback_ops() == []
    assert sorted(graph_modules().values()) == [1, 1], graph_modules()
    assert get_dynamo_metrics()["fallbacks"] == 0


def trainer_losses(device, compiled, tmp_path):
    """Per-step losses of HF's Trainer on a tiny LlamaForCausalLM (3 steps, AdamW, its own
    shuffling seed), compiled through TrainingArguments when |compiled|."""
    from transformers import Trainer, TrainingArguments

    model = hf_llama()
    g = torch.Generator().manual_seed(1)
    data = []
    for _ in range(8):
        ids = torch.randint(0, 64, (16,), generator=g)
        data.append({"input_ids": ids, "labels": ids.clone()})
    extra = dict(torch_compile=True, torch_compile_backend="neuron") if compiled else {}
    args = TrainingArguments(
        output_dir=str(tmp_path / f"{device}-{compiled}"),
        per_device_train_batch_size=4,
        max_steps=3,
        logging_steps=1,
        learning_rate=1e-3,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=device == "cpu",
        dataloader_pin_memory=False,
        **extra,
    )
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    assert next(model.parameters()).device.type == device
    return torch.tensor([h["loss"] for h in trainer.state.log_history if "loss" in h])


def test_hf_trainer_with_torch_compile_trains_on_neuron_and_matches_eager(tmp_path):
    eager = trainer_losses("neuron", False, tmp_path)
    vtrn.clear_op_tracking()
    compiled = trainer_losses("neuron", True, tmp_path)
    assert len(compiled) == 3
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(
        compiled, trainer_losses("cpu", False, tmp_path), rtol=1e-4, atol=1e-4
    )
    # The Trainer's compiled model ran as one forward and one backward module on neuron.
    assert get_dynamo_metrics()["graphs"] >= 1
    assert sorted(graph_modules().values()) == [1, 1], graph_modules()
    assert vtrn.get_fallback_ops() == []


def test_hf_llama_generate_with_a_compiled_forward_matches_eager():
    model = hf_llama().eval()
    ids = torch.randint(0, 64, (1, 5), generator=torch.Generator().manual_seed(9))
    want = model.generate(ids, max_new_tokens=4, do_sample=False)
    model = model.to("neuron")
    model.forward = torch.compile(model.forward, backend="neuron", dynamic=False)
    got = model.generate(ids.to("neuron"), max_new_tokens=4, do_sample=False)
    assert torch.equal(got.cpu(), want)
    # One graph per sequence length (the KV cache grows), each one module.
    assert get_dynamo_metrics()["graphs"] >= 1 and get_dynamo_metrics()["fallbacks"] == 0
    assert set(graph_modules().values()) == {1}, graph_modules()


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


def test_default_dynamic_compiles_each_new_shape_once():
    # dynamic=None: Dynamo makes the graph symbolic at the second shape; the backend then
    # compiles it per concrete shape, and never raises. 4 shapes give 5 static graphs: the
    # static first one, and 3, 5, 7 and 2 from the symbolic one (Dynamo tries the newest graph
    # first, so the last call of shape 2 reaches the symbolic graph; its module is the first
    # one's, found in the cache).
    f = torch.compile(lambda x, w: torch.relu(x @ w).sum(1), backend="neuron")
    w = torch.randn(8, 4)
    for b in (2, 3, 5, 7, 3, 2):
        x = torch.randn(b, 8)
        torch.testing.assert_close(
            f(x.to("neuron"), w.to("neuron")).cpu(), torch.relu(x @ w).sum(1)
        )
    m = get_dynamo_metrics()
    assert m["graphs"] == 5, m
    assert m["compiles"] + m["cache_hits"] == 5, m


def test_default_dynamic_trains_over_changing_batch_sizes_as_eager():
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    dev = copy.deepcopy(cpu).to("neuron")
    step = torch.compile(dev, backend="neuron")
    opt_cpu = torch.optim.SGD(cpu.parameters(), lr=0.1)
    opt_dev = torch.optim.SGD(dev.parameters(), lr=0.1)
    for b in (4, 6, 9, 6):
        x, y = torch.randn(b, 8), torch.randn(b, 1)
        losses = []
        for model, opt, d in ((cpu, opt_cpu, "cpu"), (step, opt_dev, "neuron")):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x.to(d)), y.to(d))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=1e-5), b
    for p, q in zip(cpu.parameters(), dev.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach())


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
