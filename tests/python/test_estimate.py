"""`vtrn estimate`: a training script's steps in shape-only execution, one process per rank."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
STEP_FIELDS = {"time_s", "compute_s", "collective_s", "exposed_collective_s", "idle_s"}
CATEGORIES = {"parameters", "gradients", "optimizer", "activations", "other"}


def estimate(*argv, timeout=600):
    result = subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "estimate", *[str(a) for a in argv]],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    return result


def estimate_json(*argv):
    result = estimate("--json", *argv)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def real_rank(tmp_path, *target):
    """The same rank's report from a computing run (every op waiting for its work, so that
    tensors die when they would on the device; see test_shape_execution.py)."""
    out = tmp_path / "real.json"
    env = dict(
        os.environ,
        VTRN_EXECUTION="run",
        NEURON_LAUNCH_BLOCKING="1",
        VTRN_ESTIMATE_OUT=str(out),
        VTRN_ESTIMATE_STEPS="3",
    )
    result = subprocess.run(
        [sys.executable, "-m", "vtrn.estimate", *[str(t) for t in target]],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())


def tiny_llama_parameter_bytes():
    """The tiny Llama's parameters (llama_step.SIZES['tiny']) in float32, each tensor rounded
    to the allocator's 512 bytes, counted by hand."""
    vocab, dim, layers, ffn = 64, 32, 2, 64
    tensors = [vocab * dim, dim, vocab * dim]  # embedding, final norm, output
    tensors += layers * [dim, dim, dim * dim, dim * dim, dim * dim, dim * dim]
    tensors += layers * [dim * ffn, ffn * dim, dim * ffn]
    return sum((4 * n + 511) // 512 * 512 for n in tensors)


def test_one_rank_reports_the_real_runs_memory_and_step_time(tmp_path):
    report = estimate_json("--steps", "3", "--", EXAMPLES / "llama_step.py", "--steps", "10")
    assert set(report) == {"instance", "lnc", "world_size", "ranks", "step_time_s", "mfu"}
    assert (report["instance"], report["lnc"], report["world_size"]) == ("trn2.48xlarge", 2, 1)
    [rank] = report["ranks"]
    assert rank["rank"] == 0
    assert len(rank["steps"]) == 3  # stopped after --steps optimizer steps, not the script's 10
    for step in rank["steps"]:
        assert set(step) >= STEP_FIELDS
        parts = step["compute_s"] + step["exposed_collective_s"] + step["idle_s"]
        assert parts == pytest.approx(step["time_s"], rel=1e-9)
        assert step["collective_s"] == 0  # one rank, no process group
    times = sorted(s["time_s"] for s in rank["steps"][1:])
    assert report["step_time_s"] == pytest.approx((times[0] + times[1]) / 2)
    # The same steps computed.
    real = real_rank(tmp_path, EXAMPLES / "llama_step.py", "--steps", "10")
    assert rank["peak_memory_bytes"] == real["peak_memory_bytes"]
    for step, real_step in zip(rank["steps"], real["steps"]):
        assert step == pytest.approx(real_step, rel=1e-6, abs=1e-12)
    assert rank["model_flops"] == real["model_flops"]
    memory = rank["memory_by_category"]
    assert memory == real["memory_by_category"]
    assert set(memory) == CATEGORIES
    params = tiny_llama_parameter_bytes()
    assert memory["parameters"] == params
    assert memory["gradients"] == params
    assert (
        memory["optimizer"] == 2 * params
    )  # AdamW's two moments (its step counts stay on the CPU)
    assert rank["model_flops"] > 0
    assert 0 < report["mfu"] < 1


def test_text_report_and_trace(tmp_path):
    trace = tmp_path / "trace.json"
    result = estimate("--steps", "2", "--trace", trace, EXAMPLES / "llama_step.py")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "trn2.48xlarge, LNC2, world of 1 ranks: step" in result.stdout
    assert "rank 0: peak memory" in result.stdout
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("cat") == "kernel" for e in events)


def test_fsdp_ranks_of_an_eight_rank_world_model_their_collectives():
    report = estimate_json(
        "--nproc-per-node",
        "8",
        "--ranks",
        "0,5",
        "--steps",
        "2",
        "--",
        EXAMPLES / "train_llama.py",
        "--layout",
        "fsdp8",
    )
    assert report["world_size"] == 8
    assert [r["rank"] for r in report["ranks"]] == [0, 5]
    for rank in report["ranks"]:
        assert all(s["collective_s"] > 0 for s in rank["steps"])
        # FSDP over 8 ranks keeps an eighth of each parameter (padded) per rank.
        assert 0 < rank["memory_by_category"]["parameters"] < tiny_llama_parameter_bytes()


def test_a_script_that_fails_exits_1_naming_the_rank(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("raise SystemExit(3)\n")
    result = estimate(script)
    assert result.returncode == 1
    assert "rank 0: the script exited with status 3" in result.stderr


def test_module_form(tmp_path):
    (tmp_path / "tinytrain.py").write_text(
        "import torch\n"
        "m = torch.nn.Linear(64, 64, device='neuron')\n"
        "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for _ in range(5):\n"
        "    m(torch.ones(8, 64, device='neuron')).sum().backward()\n"
        "    opt.step()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "estimate", "--json", "--steps", "2", "-m", "tinytrain"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    # 64x64 weight and 64 bias in float32, each rounded to 512 bytes.
    assert report["ranks"][0]["memory_by_category"]["parameters"] == 64 * 64 * 4 + 512
    # Per step: the forward matmul (8x64 by 64x64) and the weight gradient's (64x8 by 8x64),
    # 2 x 8 x 64 x 64 FLOPs each; the input needs no gradient.
    assert report["ranks"][0]["model_flops"] == 2 * (2 * 8 * 64 * 64)


def test_trace_picture_shows_each_stream_in_its_engine_colours(tmp_path):
    from PIL import Image

    # Two streams by hand: a matmul-bound kernel on stream 0, a copy on stream 3, and a
    # collective on stream 0's collective track.
    trace = {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "kernel",
                "name": "aten::mm",
                "pid": 0,
                "tid": 0,
                "ts": 0,
                "dur": 600,
                "args": {"device": 0, "tensor_us": 550, "dma_us": 50},
            },
            {
                "ph": "X",
                "cat": "gpu_memcpy",
                "name": "aten::_copy_from",
                "pid": 0,
                "tid": 3,
                "ts": 100,
                "dur": 300,
                "args": {"device": 0, "dma_us": 300},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "all_reduce",
                "pid": 0,
                "tid": 1000,
                "ts": 600,
                "dur": 400,
                "args": {"device": 0, "kind": "collective"},
            },
        ]
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    out = tmp_path / "t.png"
    result = subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "trace", path, "--png", out],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    image = Image.open(out).convert("RGB")
    left, width = 190, 1200 - 190 - 20  # the plot area (render/timeline.py)

    def colour_at(fraction, row):
        x = int(left + fraction * width)
        return "#%02x%02x%02x" % image.getpixel((x, 48 + row * 24 + 12))

    # Rows: stream 0, stream 3, then stream 0's collectives; the span is 1000 us.
    assert colour_at(0.3, 0) == "#4e79a7"  # tensor
    assert colour_at(0.8, 0) == "#f4f4f4"  # stream 0 idle after 600 us
    assert colour_at(0.2, 1) == "#f28e2b"  # dma
    assert colour_at(0.5, 1) == "#f4f4f4"
    assert colour_at(0.8, 2) == "#e15759"  # collective


def plan_json(*layout_args):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "vtrn.cli",
            "plan",
            "--model",
            "llama3-70b",
            "--seq",
            "4096",
            "--global-batch",
            "64",
            "--json",
            *layout_args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stderr
    [layout] = json.loads(result.stdout)
    return layout


LLAMA_70B = [EXAMPLES / "train_llama.py", "--size", "llama3-70b", "--checkpointing", "full"]


def test_llama3_70b_on_four_nodes_agrees_with_the_planner():
    report = estimate_json(
        "--nodes",
        "4",
        "--nproc-per-node",
        "64",
        "--ranks",
        "0",
        "--steps",
        "2",
        "--",
        *LLAMA_70B,
        "--layout",
        "tp4-fsdp2",
    )
    plan = plan_json(
        "--nodes",
        "4",
        "--layout",
        "pp=1,replicate=1,shard=64,tp=4,micro_batch=1,checkpointing=full",
    )
    assert report["world_size"] == 256
    [rank] = report["ranks"]
    assert rank["host_peak_rss_bytes"] < 2 << 30  # a 70B model's rank in under 2 GiB of host
    # The persistent state is the planner's to the byte: fp32 shards of 1/256 of the
    # parameters, their gradients, AdamW's two moments.
    memory = rank["memory_by_category"]
    for part in ("parameters", "gradients", "optimizer"):
        assert memory[part] == plan["memory_bytes"][part], part
    # The collectives come from the same model on the same groups.
    step = rank["steps"][1]
    planned = plan["time_s"]["fsdp_total"] + plan["time_s"]["tp"]
    assert step["collective_s"] == pytest.approx(planned, rel=0.05)
    # Peak memory and step time agree within 10%; docs/estimate.md takes the differences apart
    # (the script's own peak moment against the planner's three; the eager script's unfused
    # elementwise kernels). The runtime's reservation is outside the bank the script allocates
    # from, so it is taken off the planner's total.
    planned_peak = plan["memory_bytes"]["total"] - plan["memory_bytes"]["runtime"]
    assert rank["peak_memory_bytes"] == pytest.approx(planned_peak, rel=0.10)
    assert report["step_time_s"] == pytest.approx(plan["step_time_s"], rel=0.10)


def test_llama3_70b_fsdp64_on_one_node_runs_out_of_memory_as_planned():
    result = estimate(
        "--json",
        "--nproc-per-node",
        "64",
        "--ranks",
        "0",
        "--steps",
        "2",
        "--",
        *LLAMA_70B,
        "--layout",
        "fsdp8",
    )
    plan = plan_json(
        "--nodes",
        "1",
        "--layout",
        "pp=1,replicate=1,shard=64,tp=1,micro_batch=1,checkpointing=full",
    )
    assert not plan["fits"]
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("vtrn estimate: rank 0: neuron out of memory. Tried to allocate ")
    assert "has a total capacity of 23.81 GiB" in message
    [rank] = json.loads(result.stdout)["ranks"]
    # The bank was full: what was allocated plus the failed request exceeds its capacity.
    usable = 23.81 * (1 << 30)
    assert rank["peak_memory_bytes"] > usable - (1 << 30)
