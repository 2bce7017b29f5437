"""torchtitan 0.3.0 trains its llama3 debug model on neuron with `vtrn run`, as it would with
torchrun on CUDA, and with plain torchrun too: `python -m torchtitan.train --module llama3
--config llama3_debugmodel`, installed by scripts/setup.sh with
examples/torchtitan/torchtitan-0.3.0.patch applied and its test assets from
examples/torchtitan/assets. No op falls back to the CPU in any run (its rotary embedding's
complex multiply, the complex table's gather, FSDP2's mixed-dtype cat and the positions'
_assert_async run natively).

The reference is the model itself on another layout. The N-process runs (FSDP2 over N cores,
gradients reduced with PREMUL_SUM) read a dataset of N copies of the 1-process run's, so
each of their ranks sees exactly the 1-process batch (the datasets library shards a map-style
dataset into contiguous blocks); with the same seed the sharded initialization equals the
unsharded one, so the global loss of every step must equal the 1-process loss. A CPU run is
no reference here: FlexAttention, which the debug model uses, has no backward on the CPU.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torchtitan"
STEPS = 5
STEP_LINE = re.compile(r"step:\s+(\d+)\s+loss:\s+([0-9.]+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
FALLBACK = re.compile(r"Operator '([^']+)' fell back to CPU")
LAUNCHERS = {
    "vtrn run": [sys.executable, "-m", "vtrn.cli", "run"],
    # torchrun itself; --standalone picks a free rendezvous port.
    "torchrun": [sys.executable, "-m", "torch.distributed.run", "--standalone"],
}


def _dataset(tmp_path: Path, copies: int) -> Path:
    """A directory holding |copies| copies of the example dataset, one after the other."""
    folder = tmp_path / f"c4_test_x{copies}"
    folder.mkdir(exist_ok=True)
    (folder / "data.json").write_text(
        (EXAMPLE / "assets" / "c4_test" / "data.json").read_text() * copies
    )
    return folder


def _train(tmp_path: Path, nproc: int, launcher: str = "vtrn run", *extra: str) -> dict:
    """{step: [loss logged by each rank]} of torchtitan's llama3 debug model on |nproc|
    processes started by |launcher|, each rank reading the 1-process batch; |extra| are more
    torchtitan options."""
    dataset = _dataset(tmp_path, nproc)
    command = [
        *LAUNCHERS[launcher], "--nproc-per-node", str(nproc),
        "-m", "torchtitan.train", "--module", "llama3", "--config", "llama3_debugmodel",
        "--hf-assets-path", str(EXAMPLE / "assets" / "tokenizer"),
        "--dataloader.dataset-path", str(dataset),
        "--training.steps", str(STEPS), "--training.seq-len", "128",
        "--training.local-batch-size", "2", "--debug.seed", "42",
        # FSDP2 of PyTorch 2.13 shards DTensors; torchtitan's default "spmd_types" hands it
        # plain tensors, which that FSDP2 refuses for any data-parallel degree above 1.
        "--parallelism.spmd-backend", "partial_dtensor",
        "--metrics.disable-color-printing",
        "--dump-folder", str(tmp_path / f"out{nproc}-{launcher.replace(' ', '-')}"),
        *extra,
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    output = ANSI.sub("", proc.stdout + proc.stderr)
    assert proc.returncode == 0, output[-6000:]
    # Every op of the training step runs on the device: each fallback warns once per process.
    assert sorted(set(FALLBACK.findall(output))) == [], output[-6000:]
    losses: dict = {}
    for step, loss in STEP_LINE.findall(output):
        losses.setdefault(int(step), []).append(float(loss))
    assert sorted(losses) == list(range(1, STEPS + 1)), output[-6000:]
    assert all(len(v) == nproc for v in losses.values()), losses
    return losses


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> dict:
    """The 1-process run every multi-process layout is compared with."""
    losses = _train(tmp_path_factory.mktemp("torchtitan1"), 1)
    # It trained: the loss fell over the five steps.
    assert losses[STEPS][0] < losses[1][0] - 0.5, losses
    return losses


def _assert_same_losses(one: dict, many: dict) -> None:
    for step in range(1, STEPS + 1):
        (loss,) = one[step]
        # Every rank logs the same global loss, and it is the 1-process loss: bf16 parameters
        # with float32 gradient reduction leave differences of a few 1e-4.
        assert max(many[step]) == min(many[step]), (step, many[step])
        assert abs(many[step][0] - loss) < 2e-3, (step, one, many)


def test_llama3_debug_model_trains_on_4_processes_with_the_1_process_losses(one_process, tmp_path):
    _assert_same_losses(one_process, _train(tmp_path, 4))


def test_plain_torchrun_trains_it_with_the_same_losses(one_process, tmp_path):
    """torchrun, not `vtrn run`: each worker finds the device from LOCAL_RANK, as on CUDA."""
    _assert_same_losses(one_process, _train(tmp_path, 2, launcher="torchrun"))


def test_compile_enable_trains_it_compiled_with_the_eager_losses(one_process, tmp_path):
    """`--compile.enable`: torchtitan compiles each block and the loss with its default backend
    and its FlexAttention with torch.compile; on neuron tensors both go to the neuron backend
    (Inductor has no neuron code generator). No op falls back, and the losses are eager's within
    float32 reordering."""
    compiled = _train(tmp_path, 1, "vtrn run", "--compile.enable")
    for step in range(1, STEPS + 1):
        assert abs(compiled[step][0] - one_process[step][0]) < 2e-3, (step, one_process, compiled)
