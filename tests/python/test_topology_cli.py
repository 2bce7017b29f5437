"""`vtrn topo` and `vtrn mesh`: output, JSON, exit codes, placements, code and pictures."""

import json
import os
import shutil
import subprocess
import sys
import types
import xml.etree.ElementTree as ET

import PIL.Image
import pytest

from vtrn.cli import main

NO_ALGORITHM = "failed (2) to init a collective algorithm. reason: no_hier no_mesh"


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_topo_prints_the_documented_grid(capsys):
    rc, out, _ = run(capsys, "topo")
    assert rc == 0
    # "Best practices for training on AWS Neuron": chip 3 (row 0, column 3) holds ranks 12-15;
    # chip 12 (row 3, column 0) holds 48-51.
    lines = out.splitlines()
    row0 = next(line for line in lines if line.strip().startswith("row 0"))
    row3 = next(line for line in lines if line.strip().startswith("row 3"))
    assert row0.split()[-2:] == ["c3", "12-15"]
    assert row3.split()[2:4] == ["c12", "48-51"]
    assert "rank = 4 * chip + core" in out


def test_topo_lnc1_and_trn1(capsys):
    rc, out, _ = run(capsys, "topo", "--lnc", "1")
    assert rc == 0 and "c1 8-15" in out and "world 128" in out
    rc, out, _ = run(capsys, "topo", "--instance", "trn1.32xlarge")
    assert rc == 0 and "no LNC" in out and "world 32" in out


def test_mesh_exit_codes(capsys):
    assert run(capsys, "mesh", "--shape", "16,4", "--names", "shard,tp")[0] == 0
    rc, out, _ = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp")
    assert rc == 3
    assert NO_ALGORITHM in out
    assert "{0, 4, 8, 12}" in out and "{2, 6, 10, 14}" in out
    assert "vtrn mesh --placement auto" in out
    rc, _, err = run(capsys, "mesh", "--shape", "8,4", "--names", "dp,tp")
    assert rc == 2 and "holds 32 ranks, but the world has 64" in err
    rc, _, err = run(
        capsys, "mesh", "--shape", "16,4", "--names", "shard,tp", "--instance", "trn9.huge"
    )
    assert rc == 2 and "unknown instance 'trn9.huge'" in err
    rc, _, err = run(capsys, "mesh", "--shape", "16,4", "--names", "shard,tp", "--lnc", "4")
    assert rc == 2 and "use LNC 1 or 2" in err
    rc, _, err = run(capsys, "mesh", "--shape", "16,4", "--names", "shard,cp")
    assert rc == 2 and "unknown mesh axis name 'cp'" in err
    rc, _, err = run(capsys, "mesh", "--shape", "16,x", "--names", "shard,tp")
    assert rc == 2 and "--shape" in err


def test_mesh_json_fields(capsys):
    rc, out, _ = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--json")
    assert rc == 3
    data = json.loads(out)
    assert (data["world"], data["instance"], data["lnc"], data["nodes"]) == (
        64,
        "trn2.48xlarge",
        2,
        1,
    )
    dp, tp = data["axes"]
    assert dp["name"] == "dp" and dp["size"] == 8
    assert dp["groups"][0] == list(range(0, 57, 8))
    assert dp["routable"] is False and NO_ALGORITHM in dp["error"]
    assert tp["routable"] is True and tp["error"] is None
    assert tp["groups"][0] == list(range(8))
    # Sizes are byte counts; 64 KiB is Mesh, 16 MiB RDH, 256 MiB KangaRing (whole chips).
    assert {k: v["algorithm"] for k, v in tp["algorithms"].items()} == {
        "65536": "Mesh",
        "16777216": "RDH",
        "268435456": "KangaRing",
    }
    # TP8 [0..7] on chips 0 and 1 (whole chips, one 256e9 B/s link), 256 MiB all-reduce by
    # KangaRing, 2 * 4 / 2 - 1 = 3 steps, intra-chip stage folded (as model_test.cc):
    #   2 * (3 * 1.5e-6 + 1/2 * 268435456 / 256e9) = 2 * (4.5e-6 + 5.24288e-4) = 1.057576e-3
    assert tp["algorithms"]["268435456"]["seconds"] == pytest.approx(1.057576e-3, rel=1e-12)
    # 64 KiB all-reduce by Mesh: node 1.5e-6 + 1 hop * 1/2 * 65536 / 256e9 = 1.628e-6,
    #   chip 1.3e-6 + 3/4 * 65536 / 736e9 = 1.3e-6 + 6.678260869565e-8; twice the sum.
    assert tp["algorithms"]["65536"]["seconds"] == pytest.approx(
        2 * (1.628e-6 + 1.3e-6 + 49152 / 736e9), rel=1e-12
    )
    assert "placement" not in data


def test_mesh_auto_placement_json_and_file_round_trip(capsys, tmp_path):
    rc, out, _ = run(
        capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", "auto", "--json"
    )
    assert rc == 0
    data = json.loads(out)
    assert all(axis["routable"] for axis in data["axes"])
    matrix = data["placement"]
    assert len(matrix) == 8 and all(len(row) == 8 for row in matrix)
    assert sorted(r for row in matrix for r in row) == list(range(64))
    # The JSON output is itself a placement file.
    path = tmp_path / "auto.json"
    path.write_text(out)
    assert (
        run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", str(path))[0] == 0
    )
    # The documented chip-pair mesh as a bare nested list.
    chip_pairs = [(0, 12), (1, 13), (2, 14), (3, 15), (4, 8), (5, 9), (6, 10), (7, 11)]
    chip_pair_mesh = [
        [4 * chip + core for chip in pair for core in range(4)] for pair in chip_pairs
    ]
    path.write_text(json.dumps(chip_pair_mesh))
    rc, out, _ = run(
        capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", str(path), "--json"
    )
    assert rc == 0
    data = json.loads(out)
    assert data["axes"][1]["groups"][0] == [0, 1, 2, 3, 48, 49, 50, 51]
    assert data["axes"][0]["groups"][0] == [0, 4, 8, 12, 16, 20, 24, 28]


def test_mesh_placement_file_errors(capsys, tmp_path):
    path = tmp_path / "bad.json"
    twice = [[r for r in range(8 * i, 8 * i + 8)] for i in range(8)]
    twice[1][1] = 0
    path.write_text(json.dumps(twice))
    rc, _, err = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", str(path))
    assert (
        rc == 2
        and "rank 0 appears twice in the placement, at mesh positions (0, 0) and (1, 1)" in err
    )
    path.write_text(json.dumps([[0, 1]]))
    rc, _, err = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", str(path))
    assert rc == 2 and "should be a list of 8 entries" in err
    rc, _, err = run(
        capsys,
        "mesh",
        "--shape",
        "8,8",
        "--names",
        "dp,tp",
        "--placement",
        str(tmp_path / "none.json"),
    )
    assert rc == 2 and "cannot read placement file" in err


def test_mesh_no_placement_found_exits_3(capsys):
    rc, out, _ = run(
        capsys, "mesh", "--shape", "2,96", "--names", "dp,tp", "--nodes", "3", "--placement", "auto"
    )
    assert rc == 3
    assert "auto placement: none found" in out


def _stub_torch(rank):
    """Minimal torch / torch.distributed / DeviceMesh stand-ins that record the calls."""
    calls = {"new_group": [], "from_group": None}
    torch = types.ModuleType("torch")
    torch.tensor = lambda data: ("tensor", data)
    dist = types.ModuleType("torch.distributed")

    def new_group(ranks, sort_ranks=True):
        calls["new_group"].append((list(ranks), sort_ranks))
        return ("group", tuple(ranks))

    dist.new_group = new_group
    dist.get_rank = lambda: rank
    device_mesh = types.ModuleType("torch.distributed.device_mesh")

    class DeviceMesh:
        @staticmethod
        def from_group(groups, device_type, mesh, mesh_dim_names):
            calls["from_group"] = (groups, device_type, mesh, mesh_dim_names)
            return "mesh"

    device_mesh.DeviceMesh = DeviceMesh
    torch.distributed = dist
    dist.device_mesh = device_mesh
    modules = {
        "torch": torch,
        "torch.distributed": dist,
        "torch.distributed.device_mesh": device_mesh,
    }
    return modules, calls


def test_mesh_code_builds_the_documented_style_of_mesh(capsys, monkeypatch):
    rc, code, _ = run(
        capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", "auto", "--code"
    )
    assert rc == 0
    assert "sort_ranks=False" in code and "DeviceMesh.from_group(" in code
    rc, out, _ = run(
        capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", "auto", "--json"
    )
    data = json.loads(out)
    matrix = data["placement"]
    modules, calls = _stub_torch(rank=matrix[2][5])
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    exec(compile(code, "<vtrn mesh --code>", "exec"), {})
    # Every group of dp, then of tp, in mesh order, never sorted.
    dp = [[matrix[i][j] for i in range(8)] for j in range(8)]
    tp = [list(row) for row in matrix]
    assert calls["new_group"] == [(g, False) for g in dp + tp]
    groups, device_type, mesh, names = calls["from_group"]
    assert device_type == "neuron" and names == ("dp", "tp") and mesh == ("tensor", matrix)
    assert groups == [("group", tuple(dp[5])), ("group", tuple(tp[2]))]


def test_mesh_code_refused_when_unroutable(capsys):
    rc, out, err = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--code")
    assert rc == 3 and out == "" and NO_ALGORITHM in err


def test_pictures(capsys, tmp_path):
    svg = tmp_path / "mesh.svg"
    assert run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--out", str(svg))[0] == 3
    root = ET.parse(svg).getroot()
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any("NOT ROUTABLE" in t for t in texts)
    assert any("(set 2)" in t for t in texts)  # disconnected chips are marked
    topo_svg = tmp_path / "topo.svg"
    assert run(capsys, "topo", "--out", str(topo_svg))[0] == 0
    texts = [t.text for t in ET.parse(topo_svg).getroot().iter("{http://www.w3.org/2000/svg}text")]
    assert "ranks 48-51" in texts
    rc, _, err = run(capsys, "topo", "--out", str(tmp_path / "x.jpg"))
    assert rc == 2 and "FILE.svg or FILE.png" in err


def test_png_picture(capsys, tmp_path):
    png = tmp_path / "mesh.png"
    assert run(capsys, "mesh", "--shape", "16,4", "--names", "shard,tp", "--out", str(png))[0] == 0
    with PIL.Image.open(png) as image:
        assert image.format == "PNG" and image.size[0] > 400


def test_cli_does_not_import_torch():
    code = (
        "import sys; from vtrn.cli import main; "
        "rc = main(['mesh', '--shape', '8,8', '--names', 'dp,tp', '--placement', 'auto', '--json']); "
        "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)"
    )
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr


def test_console_script():
    # `make install` installs the console script; its absence is a failure, not a skip.
    assert shutil.which("vtrn") is not None, (
        "the vtrn console script is not on PATH; run `make install`"
    )
    proc = subprocess.run(
        ["vtrn", "mesh", "--shape", "8,8", "--names", "dp,tp"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3 and NO_ALGORITHM in proc.stdout


@pytest.mark.parametrize(
    "argv, message",
    [
        # Node and world caps (topo::Cluster: 1..4096 nodes, 2^20 ranks).
        (
            ["topo", "--nodes", "100000000"],
            "nodes 100000000 is out of range: vtrn models 1 to 4096 nodes",
        ),
        (["topo", "--nodes", "3000000000"], "nodes 3000000000 is out of range"),
        (["topo", "--nodes", "0"], "nodes 0 is out of range"),
        (
            ["mesh", "--shape", "64", "--names", "shard", "--nodes", "100000000"],
            "nodes 100000000 is out of range",
        ),
        # Axis sizes too wide for a C++ int, and axes whose product overflows 64 bits
        # (64 * 536903681 * 536838145 = 2^64 + 64): each axis is checked against the world cap
        # first; the C++ product check behind it is tested through vtrn.topology.
        (
            ["mesh", "--shape", "99999999999999999999", "--names", "shard"],
            "axis size 99999999999999999999 is outside",
        ),
        (
            ["mesh", "--shape", "2147483648", "--names", "shard"],
            "axis size 2147483648 is outside 1..1048576",
        ),
        (
            ["mesh", "--shape", "64,536903681,536838145", "--names", "shard,tp,dp"],
            "axis size 536903681 is outside 1..1048576",
        ),
        (["mesh", "--shape", "64,0", "--names", "shard,tp"], "axis size 0 is outside"),
        # --lnc 0 is not "the default"; --sizes '' is not "the default sizes".
        (
            ["mesh", "--shape", "64", "--names", "shard", "--lnc", "0"],
            "--lnc 0 is not a Logical NeuronCore setting",
        ),
        (["topo", "--lnc", "-1"], "--lnc -1 is not a Logical NeuronCore setting"),
        (
            ["mesh", "--shape", "64", "--names", "shard", "--lnc", "99999999999999999999"],
            "LNC 99999999999999999999 is not a Logical NeuronCore setting",
        ),
        (["mesh", "--shape", "64", "--names", "shard", "--sizes", ""], "--sizes is empty"),
        (["mesh", "--shape", "64", "--names", "shard", "--sizes", "0"], "outside 1 B..1 TiB"),
        (["mesh", "--shape", "64", "--names", "shard", "--sizes", "9" * 400], "outside 1 B..1 TiB"),
    ],
)
def test_out_of_range_input_exits_2(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (out, err)
    assert message in err
    assert "Traceback" not in err


def test_placement_file_rank_too_wide(capsys, tmp_path):
    path = tmp_path / "wide.json"
    path.write_text(json.dumps([2**40] + list(range(1, 64))))
    rc, _, err = run(capsys, "mesh", "--shape", "64", "--names", "shard", "--placement", str(path))
    assert rc == 2 and "holds rank 1099511627776, outside 0..1048575" in err


def test_largest_world(capsys):
    # 4096 nodes at LNC1: 4096 * 128 = 524,288 ranks, under the 2^20 cap.
    rc, out, _ = run(capsys, "topo", "--nodes", "4096", "--lnc", "1")
    assert rc == 0 and "world 524288" in out and "node 4095: ranks 524160-524287" in out


def test_long_groups_are_abbreviated(capsys):
    # Groups longer than 8 ranks print as the best-practices document writes them: first
    # three, ..., last.
    rc, out, _ = run(capsys, "mesh", "--shape", "16,4", "--names", "shard,tp")
    assert rc == 0
    assert "  [0, 4, 8, ..., 60] " in out
    assert "[1, 5, 9, 13" not in out
    # Only the first 4 of the 16 TP groups are listed, then a count.
    assert (
        "  [0, 1, 2, 3] " in out and "  [12, 13, 14, 15] " in out and "[16, 17, 18, 19]" not in out
    )
    assert "  ... 12 more" in out
    rc, out, _ = run(capsys, "mesh", "--shape", "64", "--names", "shard")
    assert "  [0, 1, 2, ..., 63] " in out


def test_send_recv_and_broadcast_labels(capsys):
    # The pp axis runs send/recv: a point-to-point transfer, labelled P2P, not the all-gather's
    # Hierarchical algorithm. 16 MiB over EFA: 15e-6 + 16777216 / 25e9 = 6.8608864e-4.
    rc, out, _ = run(
        capsys, "mesh", "--shape", "2,16,4", "--names", "pp,shard,tp", "--nodes", "2", "--json"
    )
    assert rc == 0
    pp = json.loads(out)["axes"][0]
    assert pp["collective"] == "send_recv"
    assert {v["algorithm"] for v in pp["algorithms"].values()} == {"P2P"}
    assert pp["algorithms"]["16777216"]["seconds"] == pytest.approx(6.8608864e-4, rel=1e-12)
    rc, out, _ = run(capsys, "mesh", "--shape", "2,16,4", "--names", "pp,shard,tp", "--nodes", "2")
    assert (
        "16 MiB: P2P" in out
        and "Hierarchical(-/" not in out.split("axis pp")[1].split("axis shard")[0]
    )
    # Broadcast is never modeled slower than all-reduce (min of a tree and scatter + all-gather).
    rc, out, _ = run(
        capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", "auto", "--json"
    )
    for axis in json.loads(out)["axes"]:
        for est in axis["algorithms"].values():
            by = est["seconds_by_collective"]
            assert by["broadcast"] <= by["all_reduce"]
