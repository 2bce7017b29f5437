"""The layouts of "Best practices for training on AWS Neuron" through the typed topology API
(vtrn.topology).

Expected values are written from that document's text; the chip-pair mesh and the torus
adjacency used to check searched placements are rebuilt here independently of the model.
"""

import pytest

from vtrn import topology
from vtrn.topology import Cluster

NO_ALGORITHM = "failed (2) to init a collective algorithm. reason: no_hier no_mesh"


def torus_adjacent(a, b):
    """The trn2.48xlarge chip grid: 4 x 4, chip = 4 * row + col, wraparound on both axes."""
    dr, dc = (a // 4 - b // 4) % 4, (a % 4 - b % 4) % 4
    return (dr == 0 and dc in (1, 3)) or (dc == 0 and dr in (1, 3))


def torus_connected(chips):
    chips = set(chips)
    start = next(iter(chips))
    seen, stack = {start}, [start]
    while stack:
        a = stack.pop()
        for b in chips - seen:
            if torus_adjacent(a, b):
                seen.add(b)
                stack.append(b)
    return seen == chips


def cluster(nodes=1, lnc=2):
    return Cluster("trn2.48xlarge", lnc, nodes)


def _chips(group, rpc=4):
    return sorted({r // rpc for r in group})


def test_starting_layout_fsdp_only():
    # 1 node, (64,) ("shard",): one FSDP64 group over every rank.
    report = cluster(1).analyze_mesh([64], ["shard"])
    (shard,) = report.axes
    assert cluster(1).world == 64 and shard.name == "shard"
    assert shard.groups == [list(range(64))]
    assert report.routable


def test_starting_layout_tp4_fsdp_within_a_node():
    # 1 node, (16, 4) ("shard", "tp"): "each row is a chip-local TP group. Each column is an FSDP
    # group spanning the 16 chips": rows [0, 1, 2, 3] ... [60, 61, 62, 63], columns [0, 4, ..., 60].
    report = cluster(1).analyze_mesh([16, 4], ["shard", "tp"])
    shard, tp = report.axes
    assert tp.groups == [[4 * chip + core for core in range(4)] for chip in range(16)]
    assert shard.groups == [list(range(col, 64, 4)) for col in range(4)]
    assert all(len(_chips(g)) == 1 for g in tp.groups)
    assert all(_chips(g) == list(range(16)) for g in shard.groups)
    assert report.routable


def test_starting_layout_tp4_fsdp_spanning_four_nodes():
    # 4 nodes, (64, 4) ("shard", "tp"): TP4 stays on a chip, the shard group spans all four
    # nodes: [0, 4, ..., 252], 16 ranks on each node (ranks 64 n .. 64 n + 63).
    c = cluster(4)
    assert c.world == 256
    report = c.analyze_mesh([64, 4], ["shard", "tp"])
    shard, tp = report.axes
    assert tp.groups[0] == [0, 1, 2, 3] and tp.groups[-1] == [252, 253, 254, 255]
    assert len(tp.groups) == 64 and all(len(_chips(g)) == 1 for g in tp.groups)
    assert shard.groups[0] == list(range(0, 256, 4))
    assert len(shard.groups) == 4
    assert [len([r for r in shard.groups[0] if r // 64 == node]) for node in range(4)] == [
        16,
        16,
        16,
        16,
    ]
    assert report.routable


def test_starting_layout_two_pipeline_stages():
    # 2 nodes, (2, 16, 4) ("pp", "shard", "tp"): one stage per node, TP4 and FSDP16 inside it;
    # only the pp groups [0, 64], [1, 65], ... cross the node boundary.
    c = cluster(2)
    assert c.world == 128
    report = c.analyze_mesh([2, 16, 4], ["pp", "shard", "tp"])
    pp, shard, tp = report.axes
    assert pp.groups == [[r, r + 64] for r in range(64)]
    assert shard.groups[0] == list(range(0, 64, 4))
    assert shard.groups[4] == list(range(64, 128, 4))
    assert all(len({r // 64 for r in g}) == 1 for g in shard.groups + tp.groups)
    assert tp.groups[0] == [0, 1, 2, 3]
    assert report.routable


def test_rank_formula_of_the_hsdp_mesh():
    report = cluster(4).analyze_mesh([4, 16, 4], ["replicate", "shard", "tp"])
    flat = report.placement
    for r in range(4):
        for s in range(16):
            for t in range(4):
                assert flat[(r * 16 + s) * 4 + t] == 64 * r + 4 * s + t
    replicate, shard, tp = report.axes
    assert shard.groups[0] == list(range(0, 61, 4))
    assert replicate.groups[0] == [0, 64, 128, 192]
    assert tp.groups[:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_single_node_layouts_that_matched_cpu_are_routable():
    c = cluster()
    assert c.analyze_mesh([64], ["shard"]).routable  # TP1 x FSDP64
    assert c.analyze_mesh([16, 4], ["shard", "tp"]).routable  # TP4 x FSDP16


def test_default_tp8_fsdp8():
    report = cluster().analyze_mesh([8, 8], ["dp", "tp"])
    dp, tp = report.axes
    assert tp.groups[0] == list(range(8)) and tp.routable
    assert dp.groups[0] == list(range(0, 57, 8)) and not dp.routable
    assert NO_ALGORITHM in dp.error
    assert "[0, 8, 16, 24, 32, 40, 48, 56]" in dp.error
    assert dp.disconnected == [[0, 4, 8, 12], [2, 6, 10, 14]]
    assert not report.routable


def test_chip_pair_mesh():
    chip_pairs = [(0, 12), (1, 13), (2, 14), (3, 15), (4, 8), (5, 9), (6, 10), (7, 11)]
    ranks = [[4 * chip + core for chip in pair for core in range(4)] for pair in chip_pairs]
    flat = [r for row in ranks for r in row]
    report = cluster().analyze_mesh([8, 8], ["dp", "tp"], flat)
    dp, tp = report.axes
    assert tp.groups[0] == [0, 1, 2, 3, 48, 49, 50, 51]
    assert dp.groups[0] == [0, 4, 8, 12, 16, 20, 24, 28]
    assert report.routable
    assert all(dp.group_routable) and all(tp.group_routable)


@pytest.mark.parametrize("structured", [True, False], ids=["structured+dfs", "dfs-only"])
@pytest.mark.parametrize(
    "lnc, shape, chips_per_tp",
    # TP8 at LNC2 (4 ranks a chip) fills 2 whole chips; TP32 at LNC2 fills 8; TP16 at LNC1
    # (8 ranks a chip) fills 2.
    [(2, [8, 8], 2), (2, [2, 32], 8), (1, [8, 16], 2)],
    ids=["TP8xFSDP8@LNC2", "TP32xDP2@LNC2", "TP16xDP8@LNC1"],
)
def test_placement_search_finds_routable_placements(lnc, shape, chips_per_tp, structured):
    c = cluster(lnc=lnc)
    found = c.search_placement(shape, ["dp", "tp"], structured_orders=structured)
    assert found.found, found.message
    assert not found.default_routable
    flat = found.placement
    assert sorted(flat) == list(range(c.world))
    rpc = c.ranks_per_chip
    dp_groups, tp_groups = c.mesh_groups(shape, ["dp", "tp"], flat)
    for group in dp_groups + tp_groups:
        assert torus_connected({r // rpc for r in group}), group
    # "Prefer TP groups inside a chip": a TP group wider than a chip takes the fewest chips it
    # can, each one whole (every rank of it in the group).
    for group in tp_groups:
        chips = {r // rpc for r in group}
        assert len(chips) == chips_per_tp, group
        assert set(group) == {rpc * chip + core for chip in chips for core in range(rpc)}, group


def test_placement_search_does_not_need_the_documented_answer():
    # With only the depth-first search, TP8 x FSDP8 still finds a routable chip-pair layout,
    # and it is not slower than the document's own chip-pair mesh at the search's 64 MiB.
    c = cluster()
    found = c.search_placement([8, 8], ["dp", "tp"], structured_orders=False)
    assert found.found
    chip_pairs = [(0, 12), (1, 13), (2, 14), (3, 15), (4, 8), (5, 9), (6, 10), (7, 11)]
    documented = [4 * chip + core for pair in chip_pairs for chip in pair for core in range(4)]
    report = c.analyze_mesh([8, 8], ["dp", "tp"], documented, [64 << 20])
    documented_cost = sum(axis.estimates[64 << 20].seconds for axis in report.axes)
    assert found.cost_seconds <= documented_cost * (1 + 1e-12)


def test_model_estimate_matches_hand_value():
    # TP4 on one chip at LNC2, 4 MiB all-reduce: 2 * (1.3 us + 3/4 * 4 MiB / (2 * 16 * 23 B/ns)).
    est = cluster().estimate([0, 1, 2, 3], "all_reduce", 4 << 20)
    assert est.algorithm == "IntraChip"
    assert est.seconds == pytest.approx(2 * (1.3e-6 + 3145728 / 736e9), rel=1e-12)


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="unknown instance 'trn9'"):
        Cluster("trn9")
    with pytest.raises(ValueError, match="trn1.32xlarge has no Logical NeuronCore setting"):
        Cluster("trn1.32xlarge", lnc=2)
    with pytest.raises(ValueError, match="appears twice in the placement"):
        cluster().analyze_mesh([64], ["shard"], [0] * 64)
    with pytest.raises(ValueError, match="holds 32 ranks, but the world has 64"):
        cluster().analyze_mesh([8, 4], ["dp", "tp"])


def test_out_of_range_integers_raise_value_error():
    # Caps (topo::Cluster): 1..4096 nodes, at most 2^20 ranks.
    assert (topology.max_nodes(), topology.max_world()) == (4096, 1 << 20)
    for nodes in (0, 4097, 100_000_000, 3_000_000_000, 10**30):
        with pytest.raises(
            ValueError, match=f"nodes {nodes} is out of range: vtrn models 1 to 4096 nodes"
        ):
            Cluster("trn2.48xlarge", 2, nodes)
    with pytest.raises(ValueError, match="LNC 1099511627776 is not a Logical NeuronCore setting"):
        Cluster("trn2.48xlarge", 1 << 40)
    # 64 * 536903681 * 536838145 = 2^64 + 64 would wrap a 64-bit product to the world of 64.
    with pytest.raises(
        ValueError, match="holds more than 9223372036854775807 ranks, but the world has 64"
    ):
        cluster().analyze_mesh([64, 536903681, 536838145], ["shard", "tp", "dp"])
