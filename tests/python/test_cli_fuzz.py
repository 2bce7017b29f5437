"""Bad input to every `vtrn` subcommand exits 2 with one line naming the value and the limit, and
never with a traceback, a wrapped number or a hang.

Each subcommand has a table of bad arguments and files. A seeded generator adds random bad
values (negative, zero, beyond a 32-bit or 64-bit integer, not a number) to every integer flag
and random byte strings as every file, so a run covers more than the table and a failure can be
replayed from its seed. Most cases call ``main()`` in this process; the ones that would hang or
replace the process without the fix (a FIFO, /dev/zero, ``vtrn run``) run it as a subprocess
under a timeout.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from vtrn._native import hlo as native_hlo
from vtrn.cli import main

SEED = 20261201
TIMEOUT_S = 60

MODEL = {"layers": 4, "hidden": 512, "heads": 8, "ffn": 1024, "vocab": 1000}

MULTIPLY = """func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

SCALAR = """func.func @main(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.multiply %a, %b : tensor<f32>
  return %0 : tensor<f32>
}
"""

# A sum over 2^40 x 2^24 = 2^64 elements: the element count wraps int64 to 0 unless it is checked.
OVERFLOW = """func.func @main(%a: tensor<1099511627776x16777216xf32>) -> tensor<f32> {
  %c = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.add across dimensions = [0, 1] : (tensor<1099511627776x16777216xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """`vtrn hlo` subprocesses use their own compile cache, not /tmp/neff_cache."""
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path_factory.mktemp("neff")))


def call(capsys, *argv):
    """(exit status, stdout, stderr) of ``vtrn ARGV`` run in this process. An exception other
    than argparse's SystemExit propagates, so a traceback fails the test."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exit_:
        rc = exit_.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def vtrn(*argv, timeout=TIMEOUT_S):
    """``python -m vtrn.cli ARGV`` as a subprocess; a hang fails as a TimeoutExpired."""
    result = subprocess.run(
        [sys.executable, "-m", "vtrn.cli", *[str(a) for a in argv]],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return result.returncode, result.stdout, result.stderr


def assert_bad_input(rc, err, *needles, argv=()):
    """Exit 2, no traceback, and one line of message (argparse adds its usage lines above it, a
    parse error the source line and a caret below it)."""
    context = f"argv {list(argv)}: rc {rc}, stderr:\n{err}"
    assert rc == 2, context
    assert "Traceback" not in err, context
    lines = err.strip().splitlines()
    assert lines, context
    if len(lines) == 3 and set(lines[2].strip()) == {"^"}:
        lines = lines[:1]  # a parse error quotes its source line with a caret under the column
    if not lines[0].startswith("usage:"):
        assert len(lines) == 1, context
    for needle in needles:
        assert needle in err, f"{needle!r} missing; {context}"


# ---- the random bad values ----------------------------------------------------------------


def bad_ints(rng: random.Random, low: int, n: int = 4) -> list[str]:
    """``n`` values an integer flag whose smallest valid value is ``low`` must refuse."""
    pool = [
        str(low - 1),
        str(low - rng.randint(2, 10**6)),
        str(2**31 + rng.randint(0, 10**6)),
        str(2**63 + rng.randint(0, 10**6)),
        str(10 ** rng.randint(20, 60)),
        "abc",
        "",
        "1.5",
        "1e3",
        "0x10",
        "--",
        "9" * rng.randint(40, 400),
    ]
    return rng.sample(pool, n)


def random_bytes(rng: random.Random) -> bytes:
    """Random garbage, random printable text, or a random prefix of a valid document."""
    kind = rng.randrange(4)
    n = rng.randint(0, 300)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(n))
    if kind == 1:
        return "".join(rng.choice('{}[]":,0123456789abcxe-. \n') for _ in range(n)).encode()
    if kind == 2:
        return MULTIPLY.encode()[: rng.randint(0, len(MULTIPLY) - 2)]
    return json.dumps(MODEL).encode()[: rng.randint(0, len(json.dumps(MODEL)) - 2)]


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


# ---- vtrn topo and vtrn mesh ---------------------------------------------------------------


def cluster_cases(rng):
    cases = [["--nodes", v] for v in bad_ints(rng, 1)]
    cases += [["--lnc", v] for v in bad_ints(rng, 1)]
    cases += [["--nodes", "4097"], ["--lnc", "3"], ["--instance", "trn9.huge"], ["--instance", ""]]
    return cases


@pytest.mark.parametrize("seed", range(3))
def test_topo_bad_arguments(capsys, seed):
    rng = random.Random(SEED + seed)
    for argv in cluster_cases(rng) + [["--out", "x.txt"], ["--bogus"]]:
        rc, _, err = call(capsys, "topo", *argv)
        assert_bad_input(rc, err, argv=argv)


def mesh_cases(rng, tmp_path):
    mesh = ["--shape", "16,4", "--names", "shard,tp"]
    cases = [mesh + c for c in cluster_cases(rng)]
    for text in ("", "0", "16,0", "16,-4", "a,b", "16;4", "1" * 30, "2097152,1", "16,,4"):
        cases.append(["--shape", text, "--names", "shard,tp"])
    cases += [mesh[:2] + ["--names", ""], mesh[:2] + ["--names", "shard,bogus"]]
    for sizes in ("", "0", "-1", "1.5TiB", "2TiB", "1PiB", "abc", "64KiB,", "9" * 40, "1e3"):
        cases.append([*mesh, "--sizes", sizes])
    placements = []
    for i in range(4):
        path = tmp_path / f"random{i}.json"
        path.write_bytes(random_bytes(rng))
        placements.append(path)
    for i, data in enumerate(
        [
            deep_json(rng.randint(2_000, 200_000)),
            json.dumps([[0] * 4] * 16).replace("0", "1e400", 1),
            json.dumps([[2**63] * 4] * 16),
            json.dumps([[-1] * 4] * 16),
            json.dumps({"placement": "x"}),
            json.dumps([list(range(4))] * 15),
            json.dumps([[True] * 4] * 16),
        ]
    ):
        path = tmp_path / f"bad{i}.json"
        path.write_text(data)
        placements.append(path)
    placements += [tmp_path, tmp_path / "missing.json"]
    cases += [[*mesh, "--placement", p] for p in placements]
    return cases


@pytest.mark.parametrize("seed", range(3))
def test_mesh_bad_arguments_and_files(capsys, tmp_path, seed):
    rng = random.Random(SEED + 100 + seed)
    for argv in mesh_cases(rng, tmp_path):
        rc, _, err = call(capsys, "mesh", *argv)
        assert_bad_input(rc, err, argv=argv)


def test_mesh_sizes_accept_the_documented_maximum_of_1_tib(capsys):
    for text in ("1TiB", "1T", "1099511627776", "1024GiB"):
        rc, out, err = call(
            capsys, "mesh", "--shape", "16,4", "--names", "shard,tp", "--sizes", text, "--json"
        )
        assert rc == 0, err
        axes = json.loads(out)["axes"]
        assert [list(axis["algorithms"]) for axis in axes] == [[str(1 << 40)]] * 2, text
        assert all(a["algorithms"][str(1 << 40)]["seconds"] > 0 for a in axes)
    rc, _, err = call(capsys, "mesh", "--shape", "16,4", "--names", "shard,tp", "--sizes", "1.5TiB")
    assert_bad_input(rc, err, "1.5TiB", "1 TiB")


# ---- vtrn plan ------------------------------------------------------------------------------


def model_file(tmp_path, name, **fields):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**MODEL, **fields}))
    return path


def plan_cases(rng, tmp_path):
    base = ["--model", "llama2-7b"]
    cases = []
    for flag, low in (
        ("--nodes", 1),
        ("--seq", 1),
        ("--global-batch", 1),
        ("--micro-batch", 1),
        ("--prefetch", 0),
        ("--top", 1),
        ("--lnc", 0),
    ):
        cases += [[*base, flag, v] for v in bad_ints(rng, low)]
    cases += [[*base, "--seq", "16777217"], [*base, "--micro-batch", "16777217"]]
    for layout in ("pp=0", "tp=99999999999", "shard=65536,tp=65536,pp=65536", "x=1", "mb=16777217"):
        cases.append([*base, "--layout", layout])
    for field in ("layers", "hidden", "heads", "ffn", "vocab", "head_dim", "kv_heads"):
        value = rng.choice([2**32 + 32, 2**31, 2**63 - 1, 2**64 + 5, -(2**31) - 1, 2**24 + 1])
        cases.append(["--model", model_file(tmp_path, f"{field}_{value}", **{field: value})])
    cases.append(["--model", model_file(tmp_path, "float", hidden=1e15)])
    cases.append(["--model", model_file(tmp_path, "params", layers=2**24, hidden=2**23, heads=8)])
    for i in range(4):
        path = tmp_path / f"random{i}.json"
        path.write_bytes(random_bytes(rng))
        cases.append(["--model", path])
    deep = tmp_path / "deep.json"
    deep.write_text(deep_json(rng.randint(2_000, 200_000)))
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**MODEL, "source": "x" * (2 << 20)}))
    cases += [
        ["--model", deep],
        ["--model", big],
        ["--model", tmp_path],
        ["--model", "/nonexistent/m.json"],
    ]
    return cases


@pytest.mark.parametrize("seed", range(3))
def test_plan_bad_arguments_and_files(capsys, tmp_path, seed):
    rng = random.Random(SEED + 200 + seed)
    for argv in plan_cases(rng, tmp_path):
        rc, _, err = call(capsys, "plan", *argv)
        assert_bad_input(rc, err, argv=argv)


@pytest.mark.parametrize(
    "field, value",
    [("layers", 4294967328), ("layers", 2**31), ("hidden", 10**15), ("vocab", 2**63)],
)
def test_plan_model_values_beyond_the_limit_are_refused_not_wrapped(capsys, tmp_path, field, value):
    # 4294967328 is 2^32 + 32: converted to a C int it would plan a 32-layer model.
    path = model_file(tmp_path, "m", **{field: value})
    rc, _, err = call(capsys, "plan", "--model", path)
    assert_bad_input(rc, err, f"'{field}'", str(value), "16777216")


@pytest.mark.parametrize("value, shown", [(1e15, "1e+15"), (2**64 + 5, "1.8446744073709552e+19")])
def test_plan_model_float_value_is_refused(capsys, tmp_path, value, shown):
    # JSON's 1e15, and an integer beyond uint64 (which the JSON reader holds as a float).
    rc, _, err = call(capsys, "plan", "--model", model_file(tmp_path, "m", hidden=value))
    assert_bad_input(rc, err, "'hidden'", shown, "must be an integer of at most 16777216")


def test_plan_parameter_count_beyond_2_50_is_refused(capsys, tmp_path):
    # Every field within 2^24, but 2^24 layers of 3 x 2^23 x 2^23 MLP weights is about 2^62.
    path = model_file(tmp_path, "m", layers=2**24, hidden=2**23, heads=8, ffn=2**23)
    rc, _, err = call(capsys, "plan", "--model", path)
    assert_bad_input(rc, err, "parameters", str(2**50))


def test_plan_seq_beyond_int32_is_exit_2(capsys):
    rc, _, err = call(capsys, "plan", "--model", "llama2-7b", "--seq", "2147483648")
    assert_bad_input(rc, err, "--seq 2147483648", "16777216")


@pytest.mark.parametrize("value", ["0", "-3"])
def test_plan_micro_batch_below_1_is_exit_2(capsys, value):
    rc, _, err = call(capsys, "plan", "--model", "llama2-7b", "--micro-batch", value)
    assert_bad_input(rc, err, f"--micro-batch {value}", "out of range 1..16777216")


def test_plan_deeply_nested_model_json_is_exit_2(capsys, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(deep_json(100_000))
    rc, _, err = call(capsys, "plan", "--model", path)
    assert_bad_input(rc, err, "nests deeper than 16")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_plan_model_and_mesh_placement_from_a_fifo_or_dev_zero_do_not_hang(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "model.json"
        os.mkfifo(path)
        what = "is a FIFO, not a regular file"
    else:
        path = "/dev/zero"
        what = "is a character device, not a regular file"
    rc, _, err = vtrn("plan", "--model", path)
    assert_bad_input(rc, err, str(path), what)
    mesh = ("mesh", "--shape", "16,4", "--names", "shard,tp", "--placement", path)
    rc, _, err = vtrn(*mesh)
    assert_bad_input(rc, err, str(path), "regular file")


def test_mesh_deeply_nested_placement_is_exit_2(capsys, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(deep_json(100_000))
    rc, _, err = call(capsys, "mesh", "--shape", "16,4", "--names", "shard,tp", "--placement", path)
    assert_bad_input(rc, err, "nests deeper")


# ---- vtrn hlo -------------------------------------------------------------------------------


def hlo_cases(rng, tmp_path):
    module = tmp_path / "m.mlir"
    module.write_text(MULTIPLY)
    a = tmp_path / "a.npy"
    np.save(a, np.ones(4, np.float32))
    cases = [[module, "-O", v] for v in bad_ints(rng, 0)] + [[module, "-O", "3"]]
    for i in range(6):
        path = tmp_path / f"random{i}.mlir"
        path.write_bytes(random_bytes(rng))
        cases.append([path])
    overflow = tmp_path / "overflow.mlir"
    overflow.write_text(OVERFLOW)
    deep = tmp_path / "deep.mlir"
    deep.write_text(
        "func.func @main() -> () attributes {a = "
        + deep_json(rng.randint(200, 10**5))
        + "} {\n return\n}"
    )
    cases += [[overflow], [deep], [tmp_path], [tmp_path / "missing.mlir"]]
    inputs = []
    for i in range(3):
        path = tmp_path / f"random{i}.npy"
        path.write_bytes(b"\x93NUMPY" + random_bytes(rng))
        inputs.append(f"{path},{a}")
    npz = tmp_path / "x.npz"
    np.savez(npz, a=np.ones(4, np.float32))
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.ones(4, np.int32))
    shaped = tmp_path / "shaped.npy"
    np.save(shaped, np.ones((2, 2), np.float32))
    pickled = tmp_path / "pickled.npy"
    np.save(pickled, np.array([{}], dtype=object), allow_pickle=True)
    inputs += [
        f"{npz},{a}",
        f"{wrong},{a}",
        f"{shaped},{a}",
        f"{pickled},{a}",
        str(a),
        f"{a},{a},{a}",
    ]
    inputs += [f"{tmp_path},{a}", f"{tmp_path / 'missing.npy'},{a}"]
    out_dir = tmp_path / "out"
    cases += [[module, "--run", "--inputs", i, "--outputs", out_dir] for i in inputs]
    return cases


@pytest.mark.parametrize("seed", range(3))
def test_hlo_bad_arguments_and_files(capsys, tmp_path, seed):
    rng = random.Random(SEED + 300 + seed)
    for argv in hlo_cases(rng, tmp_path):
        rc, _, err = call(capsys, "hlo", *argv)
        assert_bad_input(rc, err, argv=argv)


def test_hlo_element_count_overflow_is_refused_at_2_40(capsys, tmp_path):
    path = tmp_path / "overflow.mlir"
    path.write_text(OVERFLOW)
    rc, _, err = call(capsys, "hlo", path)
    assert_bad_input(rc, err, "more than 2^40")
    with pytest.raises(ValueError, match="more than 2\\^40"):
        native_hlo.parse(OVERFLOW)


def run_hlo(capsys, tmp_path, module, *arrays):
    path = tmp_path / "m.mlir"
    path.write_text(module)
    names = []
    for i, a in enumerate(arrays):
        names.append(str(tmp_path / f"in{i}.npy"))
        np.save(names[-1], a)
    out = tmp_path / "out"
    rc, _, err = call(capsys, "hlo", path, "--run", "--inputs", ",".join(names), "--outputs", out)
    assert rc == 0, err
    return np.load(out / "out0.npy")


def test_hlo_big_endian_inputs_are_read_in_their_byte_order(capsys, tmp_path):
    a = np.array([1.5, -2.0, 3.25, 1e30], dtype=">f4")
    b = np.array([2.0, 0.5, -1.0, 1e-30], dtype=">f4")
    got = run_hlo(capsys, tmp_path, MULTIPLY, a, b)
    np.testing.assert_array_equal(got, a.astype(np.float32) * b.astype(np.float32))
    # The bindings swap too: a library caller gets the same answer.
    outs, _ = native_hlo.run(MULTIPLY, [a, b])
    np.testing.assert_array_equal(outs[0], a.astype(np.float32) * b.astype(np.float32))


def test_hlo_zero_dimensional_npy_feeds_a_scalar_parameter(capsys, tmp_path):
    got = run_hlo(capsys, tmp_path, SCALAR, np.array(1.5, np.float32), np.array(-4.0, np.float32))
    assert got.shape == () and got == np.float32(-6.0)


def test_hlo_outputs_naming_a_file_is_refused_before_the_module_runs(capsys, tmp_path):
    module = tmp_path / "m.mlir"
    module.write_text(MULTIPLY)
    a = tmp_path / "a.npy"
    np.save(a, np.ones(4, np.float32))
    target = tmp_path / "taken"
    target.write_text("not a directory")
    before = native_hlo.cache_counters()
    argv = ("hlo", module, "--run", "--inputs", f"{a},{a}", "--outputs", target)
    rc, out, err = call(capsys, *argv)
    assert_bad_input(rc, err, str(target), "not a directory")
    assert out == ""  # not even compiled: no kernel table
    assert native_hlo.cache_counters() == before
    rc, _, err = call(capsys, *argv[:-1], target / "sub")
    assert_bad_input(rc, err, "not a directory")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_hlo_module_or_input_from_a_fifo_or_dev_zero_does_not_hang(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    else:
        path = "/dev/zero"
    rc, _, err = vtrn("hlo", path)
    assert_bad_input(rc, err, str(path), "regular file")
    module = tmp_path / "m.mlir"
    module.write_text(MULTIPLY)
    rc, _, err = vtrn("hlo", module, "--run", "--inputs", f"{path},{path}", "--outputs", tmp_path)
    assert_bad_input(rc, err, str(path), "regular file")


# ---- vtrn run and vtrn ops ------------------------------------------------------------------


def test_run_missing_script_and_bad_nnodes_exit_2_with_one_line(tmp_path):
    # A subprocess: `vtrn run` replaces the process with torchrun when its input is good.
    script = tmp_path / "train.py"
    script.write_text("print('ran')\n")
    rng = random.Random(SEED + 400)
    cases = [
        (["--nproc-per-node", "1", tmp_path / "missing.py"], "does not exist"),
        (["--nproc-per-node", "1", tmp_path], "is a directory"),
        (["--nnodes", "abc", script], "--nnodes abc"),
        (["--nnodes", "2:1", script], "--nnodes 2:1"),
        (["--nnodes", "0", script], "--nnodes 0"),
        (["--nnodes", rng.choice(["-1", "1:", ":2", "1.5", "99999"]), script], "--nnodes"),
        (["--nproc-per-node", "0", script], "--nproc-per-node 0"),
        (["--nproc-per-node", "abc", script], "--nproc-per-node abc"),
    ]
    for argv, needle in cases:
        rc, out, err = vtrn("run", *argv)
        assert_bad_input(rc, err, needle, argv=argv)
        assert "ran" not in out


def test_ops_unknown_op_is_exit_2(capsys):
    rc, _, err = call(capsys, "ops", "--op", "no_such_op_xyz")
    assert_bad_input(rc, err, "no_such_op_xyz")


def test_estimate_bad_arguments_exit_2_with_one_line(capsys, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('ran')\n")
    rng = random.Random(SEED + 500)
    cases = [(["--nodes", v, script], "--nodes") for v in bad_ints(rng, 1)]
    cases += [(["--steps", v, script], "--steps") for v in bad_ints(rng, 1)]
    cases += [
        (["--nodes", "4097", script], "--nodes 4097"),
        (["--nproc-per-node", "65", script], "--nproc-per-node 65 must be an integer from 1 to 64"),
        (["--nproc-per-node", "0", script], "--nproc-per-node 0"),
        (["--ranks", "8", "--nproc-per-node", "8", script], "rank 8 is outside the world of 8"),
        (["--ranks", "a,b", script], "--ranks a,b"),
        (["--ranks", "", script], "--ranks"),
        (["--lnc", "3", script], "--lnc 3"),
        (["--instance", "trn9.huge", script], "trn9.huge"),
        (["--trace", tmp_path / "missing" / "t.json", script], "does not exist"),
        ([tmp_path / "missing.py"], "does not exist"),
        ([tmp_path], "is a directory"),
        ([], "missing the training script"),
    ]
    for argv, needle in cases:
        rc, out, err = call(capsys, "estimate", *argv)
        assert_bad_input(rc, err, needle, argv=argv)
        assert "ran" not in out


def test_trace_bad_files_exit_2_with_one_line(capsys, tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"traceEvents": []}))
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(random_bytes(random.Random(SEED + 600)) + b"\x00{")
    cases = [
        ([tmp_path / "missing.json", "--png", tmp_path / "o.png"], "missing.json"),
        ([garbage, "--png", tmp_path / "o.png"], "not JSON"),
        ([empty, "--png", tmp_path / "o.png"], "no neuron device events"),
        ([empty, "--png", tmp_path / "o.txt"], "SVG or PNG"),
        ([tmp_path, "--png", tmp_path / "o.png"], "trace"),
    ]
    for argv, needle in cases:
        rc, _, err = call(capsys, "trace", *argv)
        assert_bad_input(rc, err, needle, argv=argv)
