"""torchtitan 0.3.0 trains its llama3 debug model on neuron with `vtrn run`, as it would with
torchrun on CUDA: `python -m torchtitan.train --module llama3 --config llama3_debugmodel`,
installed by scripts/setup.sh with examples/torchtitan/torchtitan-0.3.0.patch applied and its
test assets from examples/torchtitan/assets.

The reference is the model itself on another layout. The 4-process run (FSDP2 over 4 cores,
gradients reduced with PREMUL_SUM) reads a dataset of four copies of the 1-process run's, so
each of its ranks sees exactly the 1-process batch (the datasets library shards a map-style
dataset into contiguous blocks); with the same seed the sharded initialization equals the
unsharded one, so the global loss of every step must equal the 1-process loss. A CPU run is
no reference here: FlexAttention, which the debug model uses, has no backward on the CPU.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torchtitan"
STEPS = 5
STEP_LINE = re.compile(r"step:\s+(\d+)\s+loss:\s+([0-9.]+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _train(tmp_path: Path, nproc: int, dataset: Path) -> dict:
    """{step: [loss logged by each rank]} of a `vtrn run` of torchtitan's llama3 debug model."""
    command = [
        sys.executable, "-m", "vtrn.cli", "run", "--nproc-per-node", str(nproc),
        "-m", "torchtitan.train", "--module", "llama3", "--config", "llama3_debugmodel",
        "--hf-assets-path", str(EXAMPLE / "assets" / "tokenizer"),
        "--dataloader.dataset-path", str(dataset),
        "--training.steps", str(STEPS), "--training.seq-len", "128",
        "--training.local-batch-size", "2", "--debug.seed", "42",
        # FSDP2 of PyTorch 2.13 shards DTensors; torchtitan's default "spmd_types" hands it
        # plain tensors, which that FSDP2 refuses for any data-parallel degree above 1.
        "--parallelism.spmd-backend", "partial_dtensor",
        "--metrics.disable-color-printing",
        "--dump-folder", str(tmp_path / f"out{nproc}"),
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    output = ANSI.sub("", proc.stdout + proc.stderr)
    assert proc.returncode == 0, output[-6000:]
    losses: dict = {}
    for step, loss in STEP_LINE.findall(output):
        losses.setdefault(int(step), []).append(float(loss))
    assert sorted(losses) == list(range(1, STEPS + 1)), output[-6000:]
    assert all(len(v) == nproc for v in losses.values()), losses
    return losses


def test_llama3_debug_model_trains_on_1_and_4_processes_with_the_same_losses(tmp_path):
    data = EXAMPLE / "assets" / "c4_test" / "data.json"
    single = tmp_path / "c4_test"
    single.mkdir()
    shutil.copy(data, single / "data.json")
    quadruple = tmp_path / "c4_test_x4"
    quadruple.mkdir()
    (quadruple / "data.json").write_text(data.read_text() * 4)

    one = _train(tmp_path, 1, single)
    four = _train(tmp_path, 4, quadruple)
    for step in range(1, STEPS + 1):
        (loss,) = one[step]
        # Every rank logs the same global loss, and it is the 1-process loss: bf16 parameters
        # with float32 gradient reduction leave differences of a few 1e-4.
        assert max(four[step]) == min(four[step]), (step, four[step])
        assert abs(four[step][0] - loss) < 2e-3, (step, one, four)
    # It trained: the loss fell over the five steps.
    assert one[STEPS][0] < one[1][0] - 0.5, one
