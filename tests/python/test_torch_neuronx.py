"""`torch_neuronx`: TorchNeuron's public API on vtrn, and what finding it does for HF
transformers and accelerate (their Trainer trains on neuron:0 with no Neuron-specific code)."""

import importlib
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_neuronx
import vtrn

# The public names TorchNeuron's torch_neuronx/__init__.py binds (functions, classes, the
# submodules it imports), and the names its torch_neuronx/neuron.py (torch.neuron) defines.
TORCH_NEURONX_NAMES = [
    "Event", "NeuronProfiler", "Stream", "StreamContext", "clear_op_tracking", "current_device",
    "current_stream", "default_stream", "device", "device_count", "distributed", "empty_cache",
    "get_device_properties", "get_dynamo_metrics", "get_executed_ops", "get_fallback_ops",
    "is_neuron_runtime_initialized", "max_memory_allocated", "max_memory_reserved",
    "memory_allocated", "memory_reserved", "memory_stats", "memory_summary", "neuron", "nki_op",
    "profiling", "reset_accumulated_memory_stats", "reset_dynamo_metrics",
    "reset_peak_memory_stats", "set_device", "set_stream", "stream", "synchronize", "wrap_nki",
]  # fmt: skip
NEURON_MODULE_NAMES = [
    "Event", "Stream", "current_device", "current_stream", "default_stream", "device",
    "device_count", "empty_cache", "get_amp_supported_dtype", "get_device_name",
    "get_device_properties", "get_dynamo_metrics", "get_rng_state", "init", "initial_seed",
    "is_available", "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all",
    "max_memory_allocated", "max_memory_reserved", "memory", "memory_allocated",
    "memory_reserved", "memory_stats", "memory_summary", "query", "record_event",
    "reset_accumulated_memory_stats", "reset_dynamo_metrics", "reset_peak_memory_stats", "seed",
    "seed_all", "set_device", "set_rng_state", "set_stream", "stream", "synchronize",
    "wait_event", "wait_stream",
]  # fmt: skip
SUBMODULES = [
    "compiler", "distributed", "memory", "metrics", "neuron", "neuron_dynamo_backend",
    "nki_hop", "profiling", "streams",
]  # fmt: skip
# What vtrn does not have yet: each call raises NotImplementedError naming the feature.
NOT_YET = {
    "torch_neuronx.metrics.set_enabled(False)": lambda: torch_neuronx.metrics.set_enabled(False),
}


def test_every_public_name_of_torchneuron_resolves():
    missing = [name for name in TORCH_NEURONX_NAMES if not hasattr(torch_neuronx, name)]
    assert missing == []
    assert sorted(torch_neuronx.__all__) == sorted({*TORCH_NEURONX_NAMES, "compiler", "metrics"})
    for name in SUBMODULES:
        importlib.import_module(f"torch_neuronx.{name}")
    missing = [name for name in NEURON_MODULE_NAMES if not hasattr(torch_neuronx.neuron, name)]
    assert missing == []


@pytest.mark.parametrize("name", sorted(NOT_YET))
def test_what_vtrn_lacks_raises_not_implemented_naming_itself(name):
    with pytest.raises(NotImplementedError, match=re.escape(name) + " is not implemented"):
        NOT_YET[name]()


def test_devices_follow_torchneuron():
    # trn2.48xlarge at LNC2: 64 logical cores, each with a 24 GiB bank less the reserve.
    assert torch_neuronx.device_count() == 64
    props = torch_neuronx.get_device_properties("neuron:3")
    assert props.core == 3 and props.total_memory == 24 * 2**30 - 2 * 96 * 2**20
    # An index past the last device: torch.neuron's RuntimeError (CUDA's "invalid device
    # ordinal" type), the same text from both modules.
    for call in (torch_neuronx.set_device, torch_neuronx.get_device_properties):
        with pytest.raises(RuntimeError) as from_neuronx:
            call(64)
        with pytest.raises(RuntimeError) as from_torch:
            getattr(torch.neuron, call.__name__)(64)
        assert type(from_neuronx.value) is type(from_torch.value) is RuntimeError
        assert str(from_neuronx.value) == str(from_torch.value)
        assert "neuron:64 does not exist" in str(from_torch.value)
        assert "(neuron:0 to neuron:63)" in str(from_torch.value)
    with pytest.raises(ValueError, match="Expected neuron device, got cpu"):
        torch_neuronx.synchronize("cpu")
    before = torch_neuronx.current_device()
    with torch_neuronx.device(2):
        assert torch_neuronx.current_device() == 2
        assert torch.empty(1, device="neuron").device == torch.device("neuron", 2)
    assert torch_neuronx.current_device() == before


def test_memory_stats_have_torchneuron_shape():
    torch_neuronx.empty_cache()
    base = torch_neuronx.memory_stats()
    x = torch.empty(1000, device="neuron")  # 4000 bytes, rounded up to 512-byte blocks: 4096
    stats = torch_neuronx.memory_stats()
    assert stats["allocated_bytes"]["current"] - base["allocated_bytes"]["current"] == 4096
    assert stats["allocation_requests"] == base["allocation_requests"] + 1
    assert torch_neuronx.memory_allocated() == stats["allocated_bytes"]["current"]
    assert torch_neuronx.max_memory_allocated() >= stats["allocated_bytes"]["current"]
    del x
    assert torch_neuronx.memory_stats()["num_tensor_frees"] == base["num_tensor_frees"] + 1
    assert "neuron memory summary" in torch_neuronx.memory_summary()


def test_op_tracking_names_the_fallback_ops():
    torch_neuronx.clear_op_tracking()
    x = torch.arange(6.0, device="neuron")
    y = torch.median(x * 2)  # median has no neuron kernel: the CPU fallback runs it
    assert y.item() == 4.0
    assert "aten::median" in torch_neuronx.get_fallback_ops()
    assert "aten::mul.Tensor" in torch_neuronx.get_executed_ops()
    torch_neuronx.clear_op_tracking()
    assert torch_neuronx.get_fallback_ops() == [] and torch_neuronx.get_executed_ops() == []


def test_streams_and_events():
    s = torch_neuronx.Stream()
    with torch_neuronx.stream(s):
        assert torch_neuronx.current_stream() == s
        y = torch.ones(4, device="neuron") * 3
        event = torch_neuronx.neuron.record_event()
    torch_neuronx.neuron.wait_event(event)
    torch_neuronx.neuron.wait_stream(s)
    torch_neuronx.synchronize()
    assert torch_neuronx.neuron.query() and event.query()
    assert y.cpu().tolist() == [3.0] * 4
    assert torch_neuronx.current_stream() == torch_neuronx.default_stream()
    assert isinstance(torch_neuronx.Event(enable_timing=True), torch_neuronx.Event)


def test_metrics_use_torchneuron_counter_names():
    vtrn.reset_metrics()
    torch_neuronx.metrics.clear_all()
    # A shape no other test uses: the op compiles, or comes from the disk cache.
    (torch.ones(7, 3, 5, device="neuron") + 1).cpu()
    counted = vtrn.metrics()
    value = torch_neuronx.metrics.get_counter_value
    assert value("CompilationCache.TotalCompilations") == counted["compiles"]
    assert value("CompilationCache.PersistentHits") == counted["disk_cache_hits"]
    assert value("CompilationCache.InMemoryHits") == counted["memory_cache_hits"]
    assert counted["compiles"] + counted["disk_cache_hits"] + counted["memory_cache_hits"] >= 1
    report = torch_neuronx.metrics.report()
    for name in torch_neuronx.metrics.get_counter_names():
        assert f"Counter: {name}\n  Value: {value(name)}" in report
    torch_neuronx.metrics.clear_counters()
    assert torch_neuronx.metrics.get_counter_names() == []
    assert value("no such counter") is None


def test_dynamo_metrics_record_compiled_graphs():
    from torch._dynamo.utils import counters

    from torch_neuronx.neuron_dynamo_backend import NeuronCompilationMetrics, record_compilation

    torch_neuronx.reset_dynamo_metrics()
    assert torch_neuronx.get_dynamo_metrics() == []
    record_compilation(NeuronCompilationMetrics("key1", graph_name="g_0", has_collectives=True))
    assert [m.graph_id for m in torch_neuronx.neuron.get_dynamo_metrics()] == ["key1"]
    assert counters["neuron"]["compiled_graphs"] == 1
    assert counters["neuron"]["graphs_with_collectives"] == 1
    torch_neuronx.reset_dynamo_metrics()
    assert torch_neuronx.get_dynamo_metrics() == [] and not counters["neuron"]


# A plain HF training script: nothing in it names Neuron. The reference run differs only in
# use_cpu=True (and, for one process standing in for two, the batch). Lines are written with one
# write() each: torchrun runs workers with `python -u`, where print() writes piece by piece.
TRAIN = """
import os
import sys
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments
from transformers.utils import is_torch_neuron_available
from accelerate.utils import is_neuron_available

def say(*parts):
    sys.stdout.write(" ".join(str(part) for part in parts) + "\\n")

args = TrainingArguments(
    output_dir=sys.argv[2], per_device_train_batch_size=int(sys.argv[3]), max_steps=4,
    learning_rate=1e-3, logging_steps=1, report_to=[], use_cpu=sys.argv[1] == "cpu",
    save_strategy="no", seed=0, disable_tqdm=True,
)
say("detected", is_torch_neuron_available(), is_neuron_available())
say("device", args.device)
torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
)
model = LlamaForCausalLM(config)
g = torch.Generator().manual_seed(1)
data = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (32, 16), generator=g)]
trainer = Trainer(model=model, args=args, train_dataset=data)
trainer.train()
say("params", next(trainer.model.parameters()).device)
for entry in trainer.state.log_history:
    if "loss" in entry:
        say("loss", os.environ.get("RANK", "0"), repr(entry["loss"]))
"""


def test_hf_trainer_trains_on_neuron_and_matches_the_cpu(tmp_path):
    runs = {}
    for mode in ("neuron", "cpu"):
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(TRAIN), mode, str(tmp_path / mode), "4"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-4000:]
        runs[mode] = result.stdout.splitlines()
    assert "detected True True" in runs["neuron"]
    assert "device neuron:0" in runs["neuron"] and "params neuron:0" in runs["neuron"]
    assert "device cpu" in runs["cpu"] and "params cpu" in runs["cpu"]
    losses = {m: _losses(runs[m], "0") for m in runs}
    assert len(losses["neuron"]) == 4
    assert losses["neuron"] == pytest.approx(losses["cpu"], rel=1e-5)


def _said(lines, words):
    """The say() lines that start with |words|. Each is one write(), but rank 0's Trainer print()s
    its metrics in pieces, so another rank's line can land after such a piece, on its line."""
    return [line[line.rindex(words + " ") :] for line in lines if words + " " in line]


def _losses(lines, rank):
    return [float(said.split()[2]) for said in _said(lines, f"loss {rank}")]


def test_hf_trainer_under_vtrn_run_trains_ddp_and_matches_one_cpu_process(tmp_path):
    # As `accelerate launch` runs it: accelerate sees LOCAL_RANK and Trainium,
    # init_process_group("neuron"), each rank's device is torch.neuron.current_device(), its own
    # core; DDP over two processes with 4 samples each. The reference is one CPU process with
    # the global batch of 8 (the same samples in the same order: accelerate's seeded sampler).
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TRAIN))
    command = {
        "neuron": [sys.executable, "-m", "vtrn.cli", "run", "--nproc-per-node", "2", str(script)]
        + ["neuron", str(tmp_path / "neuron"), "4"],
        "cpu": [sys.executable, str(script), "cpu", str(tmp_path / "cpu"), "8"],
    }
    runs = {}
    for mode, argv in command.items():
        result = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-4000:]
        runs[mode] = result.stdout.splitlines()
    assert sorted(_said(runs["neuron"], "params")) == [
        "params neuron:0",
        "params neuron:1",
    ]
    cpu = _losses(runs["cpu"], "0")
    assert len(cpu) == 4
    for rank in ("0", "1"):  # each rank logs the four steps' loss averaged over the ranks
        assert _losses(runs["neuron"], rank) == pytest.approx(cpu, rel=1e-5), rank
