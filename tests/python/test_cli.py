"""The installed `vtrn` command dispatches to all eight subcommands, and each follows the one
convention: bad input exits 2 with one line on stderr, naming the subcommand, no traceback."""

import json
import re
import shutil
import subprocess
import sys

import pytest

MODULE = """func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

SUBCOMMANDS = ("topo", "mesh", "hlo", "plan", "run", "estimate", "trace", "ops")


def vtrn(*args, timeout=120, cwd=None):
    exe = shutil.which("vtrn")
    cmd = [exe] if exe else [sys.executable, "-m", "vtrn.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def test_help_lists_every_subcommand():
    result = vtrn("--help")
    assert result.returncode == 0
    listed = re.findall(r"^    (\S+)", result.stdout, flags=re.MULTILINE)
    assert listed == list(SUBCOMMANDS)


def test_no_subcommand_prints_help_and_exits_2():
    result = vtrn()
    assert result.returncode == 2
    assert "COMMAND" in result.stdout


def test_topo_subcommand_prints_the_chip_grid():
    # trn2.48xlarge at LNC2: 16 chips of 4 ranks, so the last chip holds ranks 60-63.
    result = vtrn("topo")
    assert result.returncode == 0, result.stderr
    assert "rank = 4 * chip + core" in result.stdout
    assert "c15 60-63" in result.stdout


def test_mesh_subcommand_reports_routability_and_exit_status():
    # TP4 x FSDP16 routes (exit 0); the default TP8 x FSDP8 mesh does not (exit 3).
    ok = vtrn("mesh", "--shape", "16,4", "--names", "shard,tp", "--json")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["routable"] and [a["name"] for a in data["axes"]] == ["shard", "tp"]
    bad = vtrn("mesh", "--shape", "8,8", "--names", "dp,tp")
    assert bad.returncode == 3
    assert "no_hier no_mesh" in bad.stdout


def test_hlo_subcommand_compiles_a_module(tmp_path, monkeypatch):
    path = tmp_path / "m.mlir"
    path.write_text(MODULE)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path / "cache"))
    result = vtrn("hlo", str(path))
    assert result.returncode == 0, result.stderr
    assert "multiply" in result.stdout


def test_hlo_subcommand_rejects_a_bad_file(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { %0 = stablehlo.frobnicate %a"
    )
    result = vtrn("hlo", str(path))
    assert result.returncode == 2
    assert result.stderr.strip()


def test_plan_subcommand_recommends_a_layout():
    # The one-layout question: TP4 x FSDP16 of a 7B model on one trn2.48xlarge is 64 ranks.
    result = vtrn("plan", "--model", "llama2-7b", "--layout", "pp=1,replicate=1,shard=16,tp=4")
    assert result.returncode == 0, result.stderr
    assert "This layout:" in result.stdout
    assert "TP4 x FSDP16" in result.stdout


def test_run_subcommand_gives_each_process_its_own_core(tmp_path):
    script = tmp_path / "show_core.py"
    script.write_text(
        # One write() per line (torchrun's workers run `python -u`, where print() writes the text
        # and the newline apart), so the two processes' lines cannot run together.
        "import os, sys, torch\n"
        "x = torch.ones(1, device='neuron')\n"
        "sys.stdout.write(' '.join(map(str, ['core', os.environ['LOCAL_RANK'],"
        " os.environ.get('NEURON_RT_VISIBLE_CORES'), torch.neuron.device_count(),"
        " torch.neuron.current_device(), x.device])) + '\\n')\n"
    )
    result = vtrn("run", "--nproc-per-node", "2", str(script), timeout=240, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("core"))
    # As under CUDA, each process sees every core of the node (64 at LNC2), and local rank i
    # starts on neuron:i, its own core.
    assert lines == ["core 0 None 64 0 neuron:0", "core 1 None 64 1 neuron:1"]


def test_ops_subcommand_lists_one_op():
    import torch  # the dispatcher is the reference

    result = vtrn("ops", "--op", "mm")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()[1:]}
    assert "mm.out" in rows and all(name.split(".")[0] == "mm" for name in rows)
    for name, status in rows.items():
        has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", "PrivateUse1")
        assert (status == "native") == has_kernel, name


@pytest.mark.parametrize(
    "argv, message",
    [
        (["topo", "--nodes", "0"], "nodes 0 is out of range"),
        (["mesh", "--shape", "16,x", "--names", "shard,tp"], "--shape"),
        (["hlo", "/nonexistent/m.mlir"], "cannot read /nonexistent/m.mlir"),
        (["plan", "--model", "llama2-7b", "--top", "0"], "--top 0"),
        (["run", "--nproc-per-node", "999", "train.py"], "--nproc-per-node 999 does not fit"),
        (["estimate", "--steps", "0", "train.py"], "--steps 0 must be an integer from 1"),
        (["trace", "/nonexistent/t.json", "--png", "t.png"], "/nonexistent/t.json"),
        (["ops", "--op", "no_such_op"], "unknown op 'no_such_op'"),
    ],
    ids=SUBCOMMANDS,
)
def test_bad_input_exits_2_with_one_line(argv, message):
    result = vtrn(*argv)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"vtrn {argv[0]}: ") and message in lines[0]
    assert "Traceback" not in result.stderr
