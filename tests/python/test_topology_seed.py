"""The seed's tables (training-best-practices-trn2.rst) through vtrn._model.

Expected values are written from the seed's text; the chip-pair mesh and the torus adjacency
used to check searched placements are rebuilt here independently of the model.
"""

import pytest

_model = pytest.importorskip("vtrn._model")

NO_ALGORITHM = "failed (2) to init a collective algorithm. reason: no_hier no_mesh"


def seed_adjacent(a, b):
    """Seed: 4 x 4 chip grid, chip = 4 * row + col, wraparound links on both axes."""
    dr, dc = (a // 4 - b // 4) % 4, (a % 4 - b % 4) % 4
    return (dr == 0 and dc in (1, 3)) or (dc == 0 and dr in (1, 3))


def seed_connected(chips):
    chips = set(chips)
    start = next(iter(chips))
    seen, stack = {start}, [start]
    while stack:
        a = stack.pop()
        for b in chips - seen:
            if seed_adjacent(a, b):
                seen.add(b)
                stack.append(b)
    return seen == chips


def cluster(nodes=1, lnc=2):
    return _model.Cluster("trn2.48xlarge", lnc, nodes)


@pytest.mark.parametrize(
    "nodes, shape, names",
    [
        (1, [64], ["shard"]),
        (1, [16, 4], ["shard", "tp"]),
        (4, [64, 4], ["shard", "tp"]),
        (4, [4, 16, 4], ["replicate", "shard", "tp"]),
        (2, [2, 16, 4], ["pp", "shard", "tp"]),
    ],
)
def test_seed_layout_table(nodes, shape, names):
    c = cluster(nodes)
    assert c.world == 64 * nodes
    report = c.analyze_mesh(shape, names)
    assert [a["name"] for a in report["axes"]] == names
    assert report["routable"]


def test_rank_formula_of_the_hsdp_mesh():
    report = cluster(4).analyze_mesh([4, 16, 4], ["replicate", "shard", "tp"])
    flat = report["placement"]
    for r in range(4):
        for s in range(16):
            for t in range(4):
                assert flat[(r * 16 + s) * 4 + t] == 64 * r + 4 * s + t
    replicate, shard, tp = report["axes"]
    assert shard["groups"][0] == list(range(0, 61, 4))
    assert replicate["groups"][0] == [0, 64, 128, 192]
    assert tp["groups"][:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_single_node_layouts_that_matched_cpu_are_routable():
    c = cluster()
    assert c.analyze_mesh([64], ["shard"])["routable"]  # TP1 x FSDP64
    assert c.analyze_mesh([16, 4], ["shard", "tp"])["routable"]  # TP4 x FSDP16


def test_default_tp8_fsdp8():
    report = cluster().analyze_mesh([8, 8], ["dp", "tp"])
    dp, tp = report["axes"]
    assert tp["groups"][0] == list(range(8)) and tp["routable"]
    assert dp["groups"][0] == list(range(0, 57, 8)) and not dp["routable"]
    assert NO_ALGORITHM in dp["error"]
    assert "[0, 8, 16, 24, 32, 40, 48, 56]" in dp["error"]
    assert dp["disconnected"] == [[0, 4, 8, 12], [2, 6, 10, 14]]
    assert not report["routable"]


def test_seed_chip_pair_mesh():
    chip_pairs = [(0, 12), (1, 13), (2, 14), (3, 15), (4, 8), (5, 9), (6, 10), (7, 11)]
    ranks = [[4 * chip + core for chip in pair for core in range(4)] for pair in chip_pairs]
    flat = [r for row in ranks for r in row]
    report = cluster().analyze_mesh([8, 8], ["dp", "tp"], flat)
    dp, tp = report["axes"]
    assert tp["groups"][0] == [0, 1, 2, 3, 48, 49, 50, 51]
    assert dp["groups"][0] == [0, 4, 8, 12, 16, 20, 24, 28]
    assert report["routable"]
    assert all(dp["group_routable"]) and all(tp["group_routable"])


@pytest.mark.parametrize(
    "lnc, shape",
    [(2, [8, 8]), (2, [2, 32]), (1, [8, 16])],
    ids=["TP8xFSDP8@LNC2", "TP32xDP2@LNC2", "TP16xDP8@LNC1"],
)
def test_placement_search_finds_routable_placements(lnc, shape):
    c = cluster(lnc=lnc)
    found = c.search_placement(shape, ["dp", "tp"])
    assert found["found"], found["message"]
    assert not found["default_routable"]
    flat = found["placement"]
    assert sorted(flat) == list(range(c.world))
    rpc = c.ranks_per_chip
    groups = c.mesh_groups(shape, ["dp", "tp"], flat)
    for axis in groups:
        for group in axis:
            assert seed_connected({r // rpc for r in group}), group


def test_model_estimate_matches_hand_value():
    # TP4 on one chip at LNC2, 4 MiB all-reduce: 2 * (1.3 us + 3/4 * 4 MiB / (2 * 16 * 23 B/ns)).
    est = cluster().estimate([0, 1, 2, 3], "all_reduce", 4 << 20)
    assert est["algorithm"] == "IntraChip"
    assert est["seconds"] == pytest.approx(2 * (1.3e-6 + 3145728 / 736e9), rel=1e-12)


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="unknown instance 'trn9'"):
        _model.Cluster("trn9", 0, 1)
    with pytest.raises(ValueError, match="trn1.32xlarge has no Logical NeuronCore setting"):
        _model.Cluster("trn1.32xlarge", 2, 1)
    with pytest.raises(ValueError, match="appears twice in the placement"):
        cluster().analyze_mesh([64], ["shard"], [0] * 64)
    with pytest.raises(ValueError, match="holds 32 ranks, but the world has 64"):
        cluster().analyze_mesh([8, 4], ["dp", "tp"])
