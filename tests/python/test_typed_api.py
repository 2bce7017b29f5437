"""The typed Python APIs: vtrn.topology, vtrn.plan, vtrn.render.units and vtrn._native.

References are published values (the trn2.48xlarge as "Best practices for training on AWS
Neuron" describes it), hand-computed values, and the raw native results the APIs wrap.
"""

import dataclasses
import json
import subprocess
import sys

import pytest

from vtrn import _native, plan, topology
from vtrn.render import mesh_code
from vtrn.render.units import format_bytes, format_seconds
from vtrn.topology import Cluster


def test_instance_spec_of_trn2():
    # 16 Trainium2 chips in a 4 x 4 torus, 8 physical cores and 96 GiB of HBM each, LNC2 default.
    spec = topology.instance("trn2.48xlarge")
    assert (spec.chips, spec.grid_rows, spec.grid_cols, spec.topology) == (16, 4, 4, "torus-2d")
    assert spec.chip.physical_cores == 8 and spec.chip.hbm_bytes == 96 << 30
    assert spec.lnc_default == 2 and spec.lnc_allowed == [1, 2]
    assert topology.instance("trn1.32xlarge").lnc_default is None
    assert "trn2.48xlarge" in topology.instance_names()
    with pytest.raises(ValueError, match="trn9"):
        topology.instance("trn9")


def test_cluster_places_ranks_node_chip_core():
    c = Cluster("trn2.48xlarge", lnc=2, nodes=2)
    assert (c.world, c.ranks_per_node, c.ranks_per_chip, c.chips_per_node) == (128, 64, 4, 16)
    # rank = 64 * node + 4 * chip + core
    assert c.locate(77) == (1, 3, 1) and c.locate(77).chip == 3
    assert c.rank_of(1, 3, 1) == 77
    # chip 5 is row 1, column 1 of the 4 x 4 torus: neighbours 1, 4, 6, 9.
    assert c.chip_coord(0, 5)[:2] == (1, 1)
    assert sorted(c.neighbors(5)) == [1, 4, 6, 9]
    assert repr(c) == "Cluster('trn2.48xlarge', lnc=2, nodes=2)"


def test_route_and_estimate_are_typed_views_of_the_model():
    c = Cluster()
    route = c.route([0, 1, 2, 3])
    assert route.routable and route.error is None and route.whole_chips
    native = _native.model.Cluster("trn2.48xlarge", 0, 1)
    raw = native.estimate([0, 1, 2, 3], "all_reduce", 4 << 20)
    est = c.estimate([0, 1, 2, 3], "all_reduce", 4 << 20)
    assert (est.algorithm, est.node, est.net, est.seconds) == (
        raw["algorithm"],
        raw["node"],
        raw["net"],
        raw["seconds"],
    )
    # TP4 on one chip at LNC2, 4 MiB all-reduce: 2 * (1.3 us + 3/4 * 4 MiB / 736 GB/s).
    assert est.seconds == pytest.approx(2 * (1.3e-6 + 3145728 / 736e9), rel=1e-12)
    assert est.label() == est.algorithm
    hier = topology.Estimate("Hierarchical", None, "Ring", 1.0)
    assert hier.label() == "Hierarchical(-/Ring)"


def test_unroutable_route_carries_the_runtime_error():
    # The default TP8 x FSDP8 DP group: chips 0, 2, 4, ..., 14 (columns 0 and 2) share no link.
    route = Cluster().route(list(range(0, 57, 8)))
    assert not route.routable
    assert "no_hier no_mesh" in route.error
    assert route.disconnected == [[0, 4, 8, 12], [2, 6, 10, 14]]


def test_analyze_mesh_estimates_are_keyed_by_bytes():
    analysis = Cluster().analyze_mesh([16, 4], ["shard", "tp"], sizes=[65536, 16 << 20])
    shard, tp = analysis.axes
    assert analysis.routable and analysis.placement == list(range(64))
    assert set(tp.estimates) == {65536, 16 << 20}
    assert tp.estimates[65536].collective == tp.collective
    assert tp.estimates[65536].seconds == tp.estimates[65536].seconds_by_collective[tp.collective]
    assert shard.shown_group() == 0


def test_report_mesh_auto_placement_routes_tp8_fsdp8():
    c = Cluster()
    default = c.report_mesh([8, 8], ["dp", "tp"])
    assert (default.placement_source, default.search, default.placement) == ("default", None, None)
    assert not default.routable and not default.ok
    # The first unroutable group is the one worth drawing.
    dp = default.analysis.axes[0]
    assert dp.shown_group() == dp.group_routable.index(False)
    auto = c.report_mesh([8, 8], ["dp", "tp"], "auto")
    assert auto.placement_source == "auto" and auto.search.found and auto.ok
    assert sorted(auto.placement) == list(range(64))
    assert auto.analysis.placement == auto.placement
    custom = c.report_mesh([8, 8], ["dp", "tp"], auto.placement)
    assert custom.placement_source == "custom" and custom.ok
    with pytest.raises(ValueError, match="'best' is not understood"):
        c.report_mesh([8, 8], ["dp", "tp"], "best")


def test_nest_is_row_major():
    assert topology.nest(list(range(6)), [2, 3]) == [[0, 1, 2], [3, 4, 5]]
    assert topology.nest(list(range(8)), [2, 2, 2]) == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]


def test_plan_result_is_typed_and_consistent():
    result = plan.plan("llama2-7b", seq=2048, global_batch=512, top=3)
    assert isinstance(result.model, plan.ModelSummary) and result.model.params == 6_738_415_616
    assert result.world == 64 and len(result.layouts) == 3 and not result.why_nothing
    best = result.layouts[0]
    assert best.name == "FSDP64" and best.mesh_shape == [64] and best.mesh_axes == ["shard"]
    # The parts add up; tokens per second = 512 sequences x 2048 tokens / step time.
    m = best.memory
    assert m.total == pytest.approx(sum(getattr(m, p) for p in m.PARTS))
    assert m.state == m.parameters + m.gradients + m.optimizer and m.total <= m.budget
    assert best.step_time_s == pytest.approx(sum(getattr(best.time, p) for p in best.time.PARTS))
    assert best.tokens_per_second == pytest.approx(512 * 2048 / best.step_time_s)
    assert "DeviceMesh" in best.code or "init_device_mesh" in best.code
    rates = [layout.tokens_per_second for layout in result.layouts]
    assert rates == sorted(rates, reverse=True)


def test_plan_code_builds_its_mesh_with_the_mesh_command_s_generator():
    # TP8 x FSDP8 on one trn2.48xlarge: the row-major mesh is not routable, so the planner's
    # code builds the searched placement explicitly, exactly as `vtrn mesh --code` would.
    result = plan.plan(
        "llama2-13b",
        seq=2048,
        global_batch=512,
        layout="pp=1,replicate=1,shard=8,tp=8",
        micro_batches=[1],
    )
    layout = result.layouts[0]
    assert layout.custom_placement and layout.placement is not None
    report = Cluster().report_mesh(layout.mesh_shape, layout.mesh_axes, layout.placement)
    # The groups computed from the placement are the ones the topology analysis forms.
    assert mesh_code.axis_groups(layout.placement, layout.mesh_shape) == [
        axis.groups for axis in report.analysis.axes
    ]
    mesh_part = mesh_code.mesh_code(report).split("import torch\n", 1)[1]
    assert mesh_part in layout.code
    assert 'fully_shard(block, mesh=mesh["shard"])' in layout.code
    # A routable row-major layout uses init_device_mesh.
    row_major = plan.plan(
        "qwen3-32b", seq=2048, global_batch=512, layout="pp=1,replicate=1,shard=16,tp=4"
    )
    assert (
        'mesh = init_device_mesh("neuron", (16, 4), mesh_dim_names=("shard", "tp"))'
        in row_major.layouts[0].code
    )


def test_axis_groups_by_hand():
    # Mesh (2, 3) over ranks 10..15 in row-major order.
    placement = [10, 11, 12, 13, 14, 15]
    assert mesh_code.axis_groups(placement, [2, 3]) == [
        [[10, 13], [11, 14], [12, 15]],
        [[10, 11, 12], [13, 14, 15]],
    ]


def test_plan_layout_names():
    fields = {f.name for f in dataclasses.fields(plan.Layout)}
    base = plan.plan("llama2-7b", layout="pp=1,replicate=1,shard=16,tp=4").layouts[0]
    assert fields >= {"memory", "time", "reason", "code"}
    cases = [
        (dict(pp=1, replicate=1, shard=16, tp=4), "TP4 x FSDP16"),
        (dict(pp=2, replicate=2, shard=8, tp=8), "PP2 x TP8 x HSDP2x8"),
        (dict(pp=1, replicate=8, shard=1, tp=1), "DDP8"),
        (dict(pp=1, replicate=1, shard=1, tp=1), "1 rank"),
    ]
    for sizes, name in cases:
        assert dataclasses.replace(base, **sizes).name == name


def test_presets_and_model_files(tmp_path):
    names = [m.name for m in plan.presets()]
    assert "llama3-70b" in names and len(names) == len(set(names))
    path = tmp_path / "tiny.json"
    fields = {"name": "tiny", "layers": 2, "hidden": 256, "heads": 4, "ffn": 1024, "vocab": 1000}
    path.write_text(json.dumps(fields))
    tiny = plan.model(str(path))
    assert (tiny.name, tiny.layers, tiny.hidden, tiny.experts) == ("tiny", 2, 256, 0)
    with pytest.raises(ValueError):
        plan.model("no-such-model")


@pytest.mark.parametrize(
    "n, kwargs, text",
    [
        (64 << 20, {}, "64 MiB"),
        (1536 << 10, {}, "1536 KiB"),
        (1000, {}, "1000 B"),
        (1 << 40, {}, "1024 GiB"),
        (3 << 39, dict(decimals=1, largest="TiB"), "1.5 TiB"),
        (12, dict(decimals=1, largest="TiB"), "12 B"),
        (int(23.81 * 2**30), dict(decimals=2), "23.81 GiB"),
    ],
)
def test_format_bytes(n, kwargs, text):
    assert format_bytes(n, **kwargs) == text


@pytest.mark.parametrize(
    "seconds, kwargs, text",
    [
        (0, {}, "0 s"),
        (1.057576e-3, {}, "1.06 ms"),
        (2.5, {}, "2.5 s"),
        (4.2e-10, {}, "0.42 ns"),
        (1.0575e-3, dict(decimals=3, units="ms,us"), "1.058 ms"),
        (1.2345e-5, dict(decimals=3, units="ms,us"), "12.345 us"),
        (0, dict(decimals=3, units="ms,us"), "0.000 us"),
    ],
)
def test_format_seconds(seconds, kwargs, text):
    assert format_seconds(seconds, **kwargs) == text


def test_native_names_a_missing_extension(monkeypatch):
    monkeypatch.setitem(_native._EXTENSIONS, "missing", "vtrn._no_such_extension")
    with pytest.raises(_native.NativeModuleMissing, match="vtrn._no_such_extension.*make install"):
        _native.missing  # noqa: B018 - the attribute access is the import
    with pytest.raises(AttributeError):
        _native.no_such_name  # noqa: B018


def test_native_extensions_load_lazily_and_without_torch():
    code = (
        "import sys, vtrn._native as n; "
        "assert not set(n._EXTENSIONS.values()) & set(sys.modules), 'loaded on import'; "
        "n.model.Cluster, n.hlo.compile, n.plan.plan; "
        "sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
