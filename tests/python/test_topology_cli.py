"""`vtrn topo` and `vtrn mesh`: output, JSON, exit codes, placements, code and pictures."""

import json
import os
import shutil
import subprocess
import sys
import types
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("vtrn._model")

from vtrn.cli import main  # noqa: E402

NO_ALGORITHM = "failed (2) to init a collective algorithm. reason: no_hier no_mesh"


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_topo_prints_seed_grid(capsys):
    rc, out, _ = run(capsys, "topo")
    assert rc == 0
    # Seed: chip 3 (row 0, column 3) holds ranks 12-15; chip 12 (row 3, column 0) holds 48-51.
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
    rc, _, err = run(capsys, "mesh", "--shape", "16,4", "--names", "shard,tp", "--instance", "trn9.huge")
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
    assert (data["world"], data["instance"], data["lnc"], data["nodes"]) == (64, "trn2.48xlarge", 2, 1)
    dp, tp = data["axes"]
    assert dp["name"] == "dp" and dp["size"] == 8
    assert dp["groups"][0] == list(range(0, 57, 8))
    assert dp["routable"] is False and NO_ALGORITHM in dp["error"]
    assert tp["routable"] is True and tp["error"] is None
    assert tp["groups"][0] == list(range(8))
    # Sizes are byte counts; 64 KiB is Mesh, 16 MiB RDH, 256 MiB KangaRing (whole chips).
    assert {k: v["algorithm"] for k, v in tp["algorithms"].items()} == {
        "65536": "Mesh", "16777216": "RDH", "268435456": "KangaRing"}
    assert all(v["seconds"] > 0 for v in tp["algorithms"].values())
    assert "placement" not in data


def test_mesh_auto_placement_json_and_file_round_trip(capsys, tmp_path):
    rc, out, _ = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", "auto", "--json")
    assert rc == 0
    data = json.loads(out)
    assert all(axis["routable"] for axis in data["axes"])
    matrix = data["placement"]
    assert len(matrix) == 8 and all(len(row) == 8 for row in matrix)
    assert sorted(r for row in matrix for r in row) == list(range(64))
    # The JSON output is itself a placement file.
    path = tmp_path / "auto.json"
    path.write_text(out)
    assert run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", str(path))[0] == 0
    # The seed's chip-pair mesh as a bare nested list.
    chip_pairs = [(0, 12), (1, 13), (2, 14), (3, 15), (4, 8), (5, 9), (6, 10), (7, 11)]
    seed = [[4 * chip + core for chip in pair for core in range(4)] for pair in chip_pairs]
    path.write_text(json.dumps(seed))
    rc, out, _ = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", str(path), "--json")
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
    assert rc == 2 and "rank 0 appears twice in the placement, at mesh positions (0, 0) and (1, 1)" in err
    path.write_text(json.dumps([[0, 1]]))
    rc, _, err = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", str(path))
    assert rc == 2 and "should be a list of 8 entries" in err
    rc, _, err = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", str(tmp_path / "none.json"))
    assert rc == 2 and "cannot read placement file" in err


def test_mesh_no_placement_found_exits_3(capsys):
    rc, out, _ = run(capsys, "mesh", "--shape", "2,96", "--names", "dp,tp", "--nodes", "3", "--placement", "auto")
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
    modules = {"torch": torch, "torch.distributed": dist, "torch.distributed.device_mesh": device_mesh}
    return modules, calls


def test_mesh_code_builds_the_seed_style_mesh(capsys, monkeypatch):
    rc, code, _ = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", "auto", "--code")
    assert rc == 0
    assert "sort_ranks=False" in code and "DeviceMesh.from_group(" in code
    rc, out, _ = run(capsys, "mesh", "--shape", "8,8", "--names", "dp,tp", "--placement", "auto", "--json")
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
    image_module = pytest.importorskip("PIL.Image")
    png = tmp_path / "mesh.png"
    assert run(capsys, "mesh", "--shape", "16,4", "--names", "shard,tp", "--out", str(png))[0] == 0
    with image_module.open(png) as image:
        assert image.format == "PNG" and image.size[0] > 400


def test_cli_does_not_import_torch():
    code = ("import sys; from vtrn.cli import main; "
            "rc = main(['mesh', '--shape', '8,8', '--names', 'dp,tp', '--placement', 'auto', '--json']); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)")
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("vtrn") is None, reason="the vtrn console script is not installed")
def test_console_script():
    proc = subprocess.run(["vtrn", "mesh", "--shape", "8,8", "--names", "dp,tp"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3 and NO_ALGORITHM in proc.stdout
