"""examples/train_llama.py on 8 processes: its hsdp2x4, tp4-fsdp2 and pp2-tp4 layouts match the
single-process cpu run, and a distributed checkpoint restores the run exactly."""

import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_llama.py"
# Six steps: enough for a layout's error to grow past the tolerance, few enough for 8 processes
# on a 2-core machine.
STEPS = 6
# bfloat16 keeps 8 significant bits: FSDP computes in bfloat16, the reference in float32.
BF16_RTOL = 2**-7


def losses(*args, launcher=True):
    cmd = (
        [sys.executable, "-m", "vtrn.cli", "run", "--nproc-per-node", "8", str(EXAMPLE)]
        if launcher
        else [sys.executable, str(EXAMPLE)]
    )
    result = subprocess.run(
        [*cmd, "--steps", str(STEPS), *args], capture_output=True, text=True, timeout=115
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return {
        int(step): float(loss)
        for step, loss in re.findall(r"^step (\d+) loss (\S+)$", result.stdout, re.M)
    }


@pytest.fixture(scope="module")
def cpu_losses():
    return losses("--layout", "cpu", launcher=False)


def _assert_matches_the_cpu_run(got, cpu_losses, layout):
    assert sorted(got) == list(range(STEPS)) == sorted(cpu_losses)
    for step in range(STEPS):
        assert got[step] == pytest.approx(cpu_losses[step], rel=BF16_RTOL), (layout, step)


@pytest.mark.parametrize(
    "layout",
    [
        # Not ddp8 or fsdp8 (about 40 s each): DDP over 8 ranks runs in test_distributed.py's
        # torchrun-style script, FSDP2 over 8 ranks in hsdp2x4 (and both against the CPU on 4
        # ranks there); test_estimate.py runs the example's fsdp8 layout.
        ["hsdp2x4"],
        ["pp2-tp4", "--schedule", "gpipe"],
        ["pp2-tp4", "--schedule", "1f1b"],
    ],
    ids=lambda a: "-".join(a).replace("--schedule-", ""),
)
def test_layout_matches_the_cpu_run(layout, cpu_losses):
    _assert_matches_the_cpu_run(losses("--layout", *layout), cpu_losses, layout)


# tp4-fsdp2's checkpoint holds both kinds of DTensor shard (FSDP's dim-0 and TP's rows and
# columns), so it covers what fsdp8's would. One run both checks the layout and saves the
# checkpoint: saving after step 3 must leave every step's loss the cpu run's.
@pytest.fixture(scope="module")
def tp4_fsdp2_saved_at_step_3(tmp_path_factory):
    checkpoint = str(tmp_path_factory.mktemp("tp4-fsdp2") / "ckpt")
    run = losses("--layout", "tp4-fsdp2", "--save-at", "3", "--checkpoint", checkpoint)
    return run, checkpoint


def test_tp4_fsdp2_matches_the_cpu_run(tp4_fsdp2_saved_at_step_3, cpu_losses):
    _assert_matches_the_cpu_run(tp4_fsdp2_saved_at_step_3[0], cpu_losses, "tp4-fsdp2")


def test_checkpoint_at_step_3_restores_steps_4_and_5(tp4_fsdp2_saved_at_step_3):
    uninterrupted, checkpoint = tp4_fsdp2_saved_at_step_3
    resumed = losses("--layout", "tp4-fsdp2", "--save-at", "3", "--resume", checkpoint)
    assert sorted(resumed) == [4, 5]
    for step in resumed:
        assert resumed[step] == uninterrupted[step], step
