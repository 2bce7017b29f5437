"""The planner's calibration: `vtrn plan --instance trn1.32xlarge` reproduces each published trn1
training run (bench/calibration/trn1_published.json, from the Neuron SDK documentation's trn1
training performance table) and the published throughput lies inside the printed error band."""

import json
import pathlib

import pytest

from vtrn import plan
from vtrn.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNS = json.loads((ROOT / "bench" / "calibration" / "trn1_published.json").read_text())["runs"]


def model_arg(run):
    return str(ROOT / run["model"]) if run["model"].endswith(".json") else run["model"]


def argv(run, *extra):
    return [
        "plan",
        "--instance",
        "trn1.32xlarge",
        "--nodes",
        str(run["nodes"]),
        "--seq",
        str(run["seq"]),
        "--global-batch",
        "1024",
        "--model",
        model_arg(run),
        "--layout",
        run["layout"],
        *extra,
    ]


@pytest.mark.parametrize("run", RUNS, ids=[r["name"].split()[0] for r in RUNS])
def test_calibration_run_within_its_band(run, capsys):
    rc = main(argv(run, "--json"))
    layouts = json.loads(capsys.readouterr().out)
    assert rc == 0
    best = layouts[0]
    # The published run's layout, reproduced: degrees, ZeRO-1, micro-batch, checkpointing.
    spec = dict(part.split("=") for part in run["layout"].split(","))
    for axis in ("pp", "replicate", "shard", "tp", "micro_batch"):
        assert best[axis] == int(spec[axis]), axis
    assert best["checkpointing"] == spec["checkpointing"]
    assert best["zero1"] is True
    assert best["fits"] and best["routable"]
    # The published seq/s lies inside the predicted band.
    seq = run["seq"]
    low, high = best["tokens_per_second_low"] / seq, best["tokens_per_second_high"] / seq
    assert low <= run["seq_per_s"] <= high, (low, run["seq_per_s"], high)
    band = best["error_band"]
    assert best["step_time_low_s"] == pytest.approx(best["step_time_s"] * (1 - band))
    assert best["step_time_high_s"] == pytest.approx(best["step_time_s"] * (1 + band))


def test_text_report_prints_the_prediction_and_band(capsys):
    run = RUNS[0]
    assert main(argv(run)) == 0
    out = capsys.readouterr().out
    assert "Predicted:" in out and "seq/s" in out
    band = plan.step_model()["error_band"]
    assert f"+-{100 * band:.0f}% band" in out


def test_step_model_parameters_are_physical():
    p = plan.step_model()
    assert 0 < p["tensor_efficiency"] <= 1
    assert p["kernel_overhead_s"] >= 0
    assert 0 <= p["comm_overlap"] < 1
    assert 0 < p["error_band"] <= 0.25
    assert "calibrate.py" in p["provenance"]


def test_ties_are_within_the_band_of_the_best(capsys):
    result = plan.plan("llama2-7b", seq=2048, global_batch=512, top=10)
    best = result.layouts[0].tokens_per_second
    assert result.layouts[0].tie_with_best
    for layout in result.layouts[1:]:
        within = best - layout.tokens_per_second <= layout.error_band * best
        assert layout.tie_with_best == within


def test_zero1_out_of_range_is_bad_input(capsys):
    rc = main(argv(RUNS[0])[:-1] + ["pp=4,replicate=32,tp=8,zero1=3"])
    assert rc == 2
    assert "zero1 is 0 or 1" in capsys.readouterr().err
