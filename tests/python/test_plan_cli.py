"""`vtrn plan`: the table, JSON, --layout, pictures, nothing-fits and bad-input exit codes.

The starting-layout table of "Best practices for training on AWS Neuron" is asserted in C++
(src/vtrn/plan/planner_test.cc); here the same choices are checked through the command line,
with the assumptions of docs/planner.md: sequence length 2048, global batch 512 (one node) or
1024 (four nodes).
"""

import json

import PIL.Image
import pytest

from vtrn import plan
from vtrn.cli import main

REQUIRED = {
    "mesh_shape",
    "mesh_axes",
    "pp",
    "replicate",
    "shard",
    "tp",
    "micro_batch",
    "checkpointing",
    "fits",
    "routable",
    "memory_bytes",
    "step_time_s",
    "tokens_per_second",
    "mfu",
    "limiting_resource",
}


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def plan_json(capsys, *argv):
    rc, out, err = run(capsys, "plan", "--json", *argv)
    return rc, json.loads(out), err


def test_presets_have_published_sizes():
    sizes = {m.name: m.params for m in plan.presets()}
    assert sizes["llama2-7b"] == 6_738_415_616  # Hugging Face checkpoint
    assert abs(sizes["gpt3-175b"] / 1e9 - 175.0) < 0.5  # Brown et al. 2020
    assert len(sizes) == 10


def test_starting_layout_small_model_one_node_fsdp64(capsys):
    rc, layouts, _ = plan_json(
        capsys, "--model", "llama2-7b", "--nodes", "1", "--seq", "2048", "--global-batch", "512"
    )
    assert rc == 0
    best = layouts[0]
    assert REQUIRED <= set(best)
    assert (best["pp"], best["replicate"], best["shard"], best["tp"]) == (1, 1, 64, 1)
    assert best["mesh_shape"] == [64] and best["mesh_axes"] == ["shard"]
    mem = best["memory_bytes"]
    assert mem["budget"] == 24 * 2**30  # 96 GiB per chip / 4 logical cores at LNC2
    assert mem["total"] <= mem["budget"]
    assert {
        "parameters",
        "gradients",
        "optimizer",
        "gathered",
        "activations",
        "logits",
        "runtime",
        "total",
    } <= set(mem)
    # tokens per second = 512 sequences x 2048 tokens / step time
    assert best["tokens_per_second"] == pytest.approx(512 * 2048 / best["step_time_s"])
    rates = [d["tokens_per_second"] for d in layouts]
    assert rates == sorted(rates, reverse=True)


def test_starting_layout_70b_four_nodes_tp4_fsdp64(capsys):
    rc, layouts, _ = plan_json(
        capsys,
        "--model",
        "llama3-70b",
        "--nodes",
        "4",
        "--seq",
        "2048",
        "--global-batch",
        "1024",
        "--top",
        "3",
    )
    assert rc == 0 and len(layouts) == 3
    assert layouts[0]["mesh_shape"] == [64, 4] and layouts[0]["mesh_axes"] == ["shard", "tp"]


def test_starting_layout_hsdp_when_adding_nodes(capsys):
    rc, layouts, _ = plan_json(
        capsys, "--model", "llama2-7b", "--nodes", "4", "--seq", "2048", "--global-batch", "512"
    )
    assert rc == 0
    assert layouts[0]["mesh_shape"] == [4, 64] and layouts[0]["mesh_axes"] == ["replicate", "shard"]


def test_table_code_and_reason(capsys):
    rc, out, _ = run(
        capsys,
        "plan",
        "--model",
        "qwen3-32b",
        "--seq",
        "2048",
        "--global-batch",
        "512",
        "--top",
        "5",
    )
    assert rc == 0
    assert "TP4 x FSDP16" in out
    assert 'init_device_mesh("neuron", (16, 4), mesh_dim_names=("shard", "tp"))' in out
    assert "Limiting resource:" in out
    assert "The alternatives:" in out and "Without TP" in out
    assert "tokens/s" in out


def test_layout_evaluates_exactly_that_layout(capsys):
    # The document's TP8 x FSDP8: the default mesh is not routable, the searched placement is.
    rc, layouts, _ = plan_json(
        capsys,
        "--model",
        "llama2-13b",
        "--seq",
        "2048",
        "--global-batch",
        "512",
        "--layout",
        "pp=1,replicate=1,shard=8,tp=8",
        "--micro-batch",
        "1",
    )
    assert rc == 0
    d = layouts[0]
    assert (d["shard"], d["tp"], d["micro_batch"]) == (8, 8, 1)
    assert d["routable"] and d["placement"] is not None
    assert "DeviceMesh.from_group" in d["code"]


def test_layout_without_placement_search_is_unroutable(capsys):
    rc, layouts, _ = plan_json(
        capsys,
        "--model",
        "llama2-13b",
        "--seq",
        "2048",
        "--global-batch",
        "512",
        "--layout",
        "shard=8,tp=8",
        "--no-placement-search",
        "--checkpointing",
        "selective",
    )
    assert rc == 1
    assert not layouts[0]["routable"]
    assert layouts[0]["limiting_resource"] == "collective topology"


def test_nothing_fits_says_why_and_what_would(capsys):
    rc, out, _ = run(
        capsys,
        "plan",
        "--model",
        "llama3.1-405b",
        "--nodes",
        "1",
        "--seq",
        "2048",
        "--global-batch",
        "512",
    )
    assert rc == 1
    assert "Nothing fits" in out and "nodes it fits" in out


def test_json_model_file(tmp_path, capsys):
    path = tmp_path / "tiny.json"
    path.write_text(
        json.dumps(
            {
                "name": "tiny",
                "layers": 4,
                "hidden": 512,
                "heads": 8,
                "ffn": 2048,
                "activation": "gelu",
                "vocab": 1000,
            }
        )
    )
    rc, layouts, _ = plan_json(
        capsys, "--model", str(path), "--seq", "512", "--global-batch", "64", "--top", "1"
    )
    assert rc == 0 and layouts[0]["fits"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--model", "llama9-1t"], "llama3-70b"),  # unknown preset lists the known ones
        (["--model", "llama2-7b", "--nodes", "0"], "at least one node"),
        (
            ["--model", "llama2-7b", "--global-batch", "100", "--layout", "shard=64"],
            "not divisible",
        ),
        (["--model", "llama2-7b", "--layout", "shard=32"], "has 32 ranks"),
        (["--model", "llama2-7b", "--layout", "tp=64"], "does not divide the 32 attention heads"),
        (["--model", "llama2-7b", "--seq", "0"], "--seq 0 is out of range 1..16777216"),
        (["--model", "llama2-7b", "--out", "x.txt"], "SVG or PNG"),
    ],
)
def test_bad_input_exits_2(capsys, argv, needle):
    rc, _, err = run(capsys, "plan", *argv)
    assert rc == 2
    assert needle in err


def test_bad_model_file_names_the_field(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"layers": 4, "hidden": 512, "heads": 8, "vocab": 1000}))
    rc, _, err = run(capsys, "plan", "--model", str(path))
    assert rc == 2 and "'ffn'" in err


@pytest.mark.parametrize("suffix", ["svg", "png"])
def test_out_draws_the_breakdown(tmp_path, capsys, suffix):
    path = tmp_path / f"plan.{suffix}"
    rc, out, _ = run(
        capsys,
        "plan",
        "--model",
        "llama2-7b",
        "--seq",
        "2048",
        "--global-batch",
        "512",
        "--top",
        "4",
        "--out",
        str(path),
    )
    assert rc == 0 and path.exists() and path.stat().st_size > 0
    if suffix == "svg":
        text = path.read_text()
        assert "memory per rank" in text and "step time" in text
    else:  # Pillow is a test dependency (requirements-dev.txt): no skip when it is missing
        with PIL.Image.open(path) as image:
            assert image.format == "PNG" and image.size[0] > 400
