"""`vtrn estimate` picks one representative rank per distinct role of the script's mesh."""

import json
import subprocess
import sys

import pytest
from test_estimate import ROOT

from vtrn import _native
from vtrn.cli import CommandError
from vtrn.cli.estimate import _layout_roles
from vtrn.estimate import layout_meshes, representative_ranks

# A script that builds a PP2 x FSDP2 x TP2 mesh of 8 ranks, row-major as DeviceMesh places it,
# and takes optimizer steps on a parameter, reducing its gradient over the FSDP group.
MESH_SCRIPT = """
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

dist.init_process_group("neuron")
mesh = init_device_mesh("neuron", (2, 2, 2), mesh_dim_names=("pp", "shard", "tp"))
w = torch.nn.Parameter(torch.ones(64, 64, device="neuron"))
opt = torch.optim.SGD([w], lr=0.1)
for _ in range(4):
    (w * 2).sum().backward()
    dist.all_reduce(w.grad, group=mesh["shard"].get_group())
    opt.step()
"""


def stages(reps):
    return [rank for rank, _ in reps]


def test_pp2_tp2_fsdp2_is_two_roles_the_first_rank_of_each_stage():
    # By hand: the mesh (pp, shard, tp) = (2, 2, 2) is row-major, so stage 0 holds ranks 0-3 and
    # stage 1 ranks 4-7; the TP and FSDP ranks within a stage are symmetric.
    layout = _native.plan.parse_layout("pp=2,shard=2,tp=2")
    assert layout["mesh_axes"] == ["pp", "shard", "tp"]
    [mesh] = layout_meshes(layout)
    assert mesh["ranks"] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    reps = representative_ranks([mesh])
    assert reps == [(0, "first pipeline stage of 2"), (4, "last pipeline stage of 2")]
    assert _layout_roles("pp=2,shard=2,tp=2", 8) == reps


def test_middle_stages_share_one_role():
    # PP4 x TP2: stages hold ranks 0-1, 2-3, 4-5, 6-7; stages 1 and 2 are alike.
    reps = _layout_roles("pp=4,tp=2", 8)
    assert stages(reps) == [0, 2, 6]
    assert reps[1][1] == "middle pipeline stages (1 to 2) of 4"
    # PP8 x HSDP2x2 x TP4 on 128 ranks: 16 ranks per stage.
    assert stages(_layout_roles("pp=8,replicate=2,shard=2,tp=4", 128)) == [0, 16, 112]


def test_without_a_pipeline_every_rank_has_one_role():
    assert _layout_roles("shard=16,tp=4", 64) == [(0, "every rank")]
    assert representative_ranks([]) == [(0, "every rank")]
    # A mesh whose pipeline axis is not outermost, and whose ranks are not row-major: the
    # first rank of each stage, wherever it sits.
    mesh = {"dim_names": ["dp", "pp"], "ranks": [[5, 1], [4, 0]]}
    assert stages(representative_ranks([mesh])) == [1, 5]


def test_a_layout_of_another_world_size_is_refused():
    with pytest.raises(CommandError, match="has 8 ranks, but the world has 16"):
        _layout_roles("pp=2,shard=2,tp=2", 16)
    with pytest.raises(CommandError, match="--layout pp=two"):
        _layout_roles("pp=two", 8)


def test_by_default_the_script_s_own_mesh_picks_the_ranks(tmp_path):
    script = tmp_path / "mesh_train.py"
    script.write_text(MESH_SCRIPT)
    result = subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "estimate", "--json", "--nproc-per-node", "8"]
        + ["--steps", "2", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["world_size"] == 8
    assert [(r["rank"], r["role"]) for r in report["ranks"]] == [
        (0, "first pipeline stage of 2"),
        (4, "last pipeline stage of 2"),
    ]
    for rank in report["ranks"]:
        assert len(rank["steps"]) == 2
        assert all(s["collective_s"] > 0 for s in rank["steps"])
        assert "meshes" not in rank
