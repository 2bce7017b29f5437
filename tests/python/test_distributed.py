"""The `neuron` c10d backend, `vtrn run`, and topology-checked collectives."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

SCRIPTS = pathlib.Path(__file__).parent / "dist_scripts"
RUNTIME_ERROR = "failed (2) to init a collective algorithm. reason: no_hier no_mesh"


def vtrn_run(*args, env=None, timeout=110):
    return subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_every_collective_on_four_processes():
    result = vtrn_run("--nproc-per-node", "4", str(SCRIPTS / "collectives.py"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    # Each rank prints "rank R OK" once its checks passed (lines of ranks may interleave).
    assert sorted(re.findall(r"rank (\d) OK", result.stdout)) == ["0", "1", "2", "3"], result.stdout


def test_every_reduce_op_matches_the_cpu_on_every_dtype():
    # Four float dtypes x 6 ops, four integer dtypes x 8 ops, bool x 7 ops: 63 cases, each
    # through all_reduce, reduce, reduce_scatter_tensor (and its untouched input) and
    # reduce_scatter; AVG also over a 3-rank group (8 dtypes); PREMUL_SUM with a tensor factor.
    result = vtrn_run("--nproc-per-node", "4", str(SCRIPTS / "reduce_ops.py"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    lines = result.stdout.splitlines()
    checked = [line for line in lines if line.startswith("ok ")]
    assert len(checked) == 63 * 5 + 8 + 1, len(checked)
    for case in (
        "ok all_reduce PREMUL_SUM bfloat16",
        "ok reduce_scatter_tensor PREMUL_SUM float16",
        "ok all_reduce over 3 AVG bfloat16",
        "ok all_reduce over 3 AVG int8",
        "ok reduce_scatter BXOR int64",
        "ok all_reduce SUM bool",
        "ok reduce PRODUCT uint8",
    ):
        assert case in checked, case
    refused = [line for line in lines if line.startswith("refused ")]
    assert refused == [
        "refused AVG bool",
        "refused PREMUL_SUM int32",
        "refused BAND float32",
        "refused BXOR bfloat16",
    ]
    assert sorted(re.findall(r"rank (\d) OK", result.stdout)) == ["0", "1", "2", "3"]


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_ddp_and_fsdp2_losses_match_the_cpu_run(mode):
    result = vtrn_run("--nproc-per-node", "4", str(SCRIPTS / "train_ddp_fsdp.py"), mode)
    assert result.returncode == 0, result.stderr[-4000:]
    steps = [line.split() for line in result.stdout.splitlines() if line.startswith("step ")]
    assert len(steps) == 5
    for _, step, distributed, cpu in steps:
        assert float(distributed) == pytest.approx(float(cpu), rel=1e-5), (mode, step)


@pytest.mark.parametrize("rank", [0, 63])
def test_64_rank_world_checks_the_seed_meshes(rank):
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "mesh64.py"), str(rank)],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = dict(line.split(": ", 1) for line in result.stdout.strip().splitlines())
    assert lines["TP1 x FSDP64"] == "ok"
    assert lines["TP4 x FSDP16"] == "ok"
    assert lines["TP8 x FSDP8 chip pairs"] == "ok"
    # The default mesh: the TP all-reduce runs first and succeeds; the FSDP all-gather fails.
    failure = lines["TP8 x FSDP8 default"]
    # torch.distributed.DistBackendError (a RuntimeError), the type NCCL's failures have
    assert failure.startswith("DistBackendError: all_gather_into_tensor on a group of 8 ranks")
    assert RUNTIME_ERROR in failure
    dp_group = [rank % 8 + 8 * k for k in range(8)]
    assert f"replica-group: {dp_group}" in failure


def test_cpu_tensor_to_a_neuron_collective_is_refused():
    result = vtrn_run("--nproc-per-node", "2", str(SCRIPTS / "misuse.py"), "cpu-tensor")
    # Both ranks refuse (their lines may interleave).
    message = "a tensor on cpu was passed to the neuron collective all_gather"
    assert result.stdout.count(message) == 2, result.stdout + result.stderr[-3000:]


def test_two_processes_on_one_core_are_refused():
    env = dict(os.environ, NEURON_RT_VISIBLE_CORES="5")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(SCRIPTS / "misuse.py"),
            "same-core",
        ],
        capture_output=True,
        text=True,
        timeout=110,
        env=env,
    )
    assert "ranks 0 and 1 both run on logical core 5 of node 0" in result.stdout, (
        result.stdout + result.stderr[-3000:]
    )


def test_two_processes_of_one_job_on_one_core_are_refused_with_both_named(tmp_path):
    # Every process sees all the node's cores; two that allocate on neuron:0 collide.
    script = tmp_path / "same_device.py"
    script.write_text(
        "import os, sys, time, torch\n"
        "if os.environ['LOCAL_RANK'] == '1':\n"
        "    time.sleep(3)\n"
        "try:\n"
        "    torch.ones(1, device='neuron:0').cpu()\n"
        "    sys.stdout.write(f'ok {os.getpid()}\\n')\n"
        "    time.sleep(6)\n"
        "except RuntimeError as err:\n"
        "    sys.stdout.write('ERROR ' + ' '.join(str(err).split()) + '\\n')\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
        + [str(script)],
        capture_output=True,
        text=True,
        timeout=110,
    )
    holder = re.search(r"^ok (\d+)$", result.stdout, flags=re.MULTILINE)
    errors = [line for line in result.stdout.splitlines() if line.startswith("ERROR")]
    assert holder and len(errors) == 1, result.stdout + result.stderr[-3000:]
    assert (
        f"neuron:0 is logical core 0 of this node (trn2.48xlarge, LNC2), which process "
        f"{holder[1]} (RANK 0, LOCAL_RANK 0) already uses; process " in errors[0]
    )
    assert (
        "(RANK 1, LOCAL_RANK 1) cannot use it too: a NeuronCore belongs to one process"
        in (errors[0])
    )


def test_world_that_does_not_fit_the_instance_is_refused():
    result = vtrn_run("--nproc-per-node", "65", str(SCRIPTS / "misuse.py"), "x")
    assert result.returncode == 2
    assert (
        "--nproc-per-node 65 does not fit: trn2.48xlarge has 64 logical cores per node"
        in result.stderr
    )
    result = vtrn_run("--lnc", "1", "--nproc-per-node", "129", str(SCRIPTS / "misuse.py"), "x")
    assert "has 128 logical cores per node" in result.stderr


def test_two_nodes_on_one_host_rendezvous_like_torchrun():
    # Two `vtrn run` launchers, one per node, meet at a c10d rendezvous endpoint; the four
    # ranks' group spans both nodes (a hierarchical route).
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    common = [
        "--nnodes",
        "2",
        "--rdzv-endpoint",
        f"127.0.0.1:{port}",
        "--nproc-per-node",
        "2",
        str(SCRIPTS / "collectives.py"),
    ]
    launchers = [
        subprocess.Popen(
            [sys.executable, "-m", "vtrn.cli", "run", "--node-rank", str(node), *common],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for node in (0, 1)
    ]
    outputs = [p.communicate(timeout=110) for p in launchers]
    assert all(p.returncode == 0 for p in launchers), [err[-3000:] for _, err in outputs]
    ranks = sorted(r for out, _ in outputs for r in re.findall(r"rank (\d) OK", out))
    assert ranks == ["0", "1", "2", "3"]


def test_a_cuda_style_torchrun_script_matches_the_cpu_run():
    # set_device(LOCAL_RANK), torch.device(f"neuron:{LOCAL_RANK}"), init_device_mesh("neuron",
    # (2, 4)) without init_process_group, FSDP2 x TP, then DDP with device_ids=[local_rank].
    result = vtrn_run("--nproc-per-node", "8", str(SCRIPTS / "torchrun_style.py"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    rows = [line.split() for line in result.stdout.splitlines()]
    for name in ("fsdp_tp", "ddp"):
        steps = [row for row in rows if row and row[0] == name]
        assert len(steps) == 4, (name, result.stdout)
        for _, step, distributed, cpu in steps:
            assert float(distributed) == pytest.approx(float(cpu), rel=1e-5), (name, step)


def test_fsdp2_gradient_divide_factor_matches_the_cpu():
    # Neither factor is the group size (4): FSDP2 reduce-scatters with PREMUL_SUM(1 / factor).
    result = vtrn_run("--nproc-per-node", "4", str(SCRIPTS / "fsdp_divide.py"), "2", "3")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("factor ")]
    for factor in ("2", "3"):
        steps = [row[2:] for row in rows if row[1] == factor and row[2] == "step"]
        assert len(steps) == 4, (factor, result.stdout)
        for _, step, distributed, cpu in steps:
            assert float(distributed) == pytest.approx(float(cpu), rel=1e-5), (factor, step)
        (diff,) = [float(row[3]) for row in rows if row[1] == factor and row[2] == "max_param_diff"]
        assert diff < 1e-6, factor


def test_torch_multiprocessing_spawn_workers_pick_their_cores(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "mp_spawn.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    workers = sorted(line for line in result.stdout.splitlines() if line.startswith("worker"))
    # Each sees the node's 64 cores, runs on neuron:rank, which is logical core rank; the sum
    # of rank + 1 over four ranks is 10.
    assert workers == [
        f"worker {k} neuron:{k} [10.0, 10.0, 10.0] core {k} sees 64" for k in range(4)
    ]
    (refusal,) = [line for line in result.stdout.splitlines() if line.startswith("intruder")]
    assert "intruder ERROR neuron:0 is logical core 0 of this node" in refusal
    assert "a NeuronCore belongs to one process" in refusal


def test_fsdp2_and_tp_compiled_per_rank_match_eager_and_the_cpu():
    # torch.compile(backend="neuron") on each of 4 ranks: FSDP2, then FSDP2 x TP (DTensor).
    result = vtrn_run("--nproc-per-node", "4", str(SCRIPTS / "compiled_fsdp_tp.py"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    rows = [line.split() for line in result.stdout.splitlines()]
    for name in ("fsdp", "fsdp_tp"):
        steps = [row for row in rows if row and row[0] == name and row[1] != "graphs"]
        assert len(steps) == 3, (name, result.stdout)
        # The backend compiled this model (it was not skipped).
        (graphs,) = [int(row[2]) for row in rows if row[:2] == [name, "graphs"]]
        assert graphs >= 1, (name, result.stdout)
        for _, step, compiled, eager, cpu in steps:
            assert float(compiled) == pytest.approx(float(eager), rel=1e-6), (name, step)
            assert float(compiled) == pytest.approx(float(cpu), rel=1e-5), (name, step)


def test_collectives_inside_compiled_modules(tmp_path):
    # TP (DTensor) and direct functional collectives under torch.compile(fullgraph=True) on 4
    # ranks: each AOT graph is one module with its collectives inside as custom calls.
    env = dict(
        os.environ,
        TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path / "neff"),
        TORCH_NEURONX_HLO_CACHE_DIR=str(tmp_path / "hlo"),
    )
    (tmp_path / "hlo").mkdir()
    result = vtrn_run("--nproc-per-node", "4", str(SCRIPTS / "compiled_collectives.py"), env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()]
    tp = [row for row in rows if row[0] == "tp"]
    assert len(tp) == 3, result.stdout
    for _, step, compiled, eager, cpu in tp:
        assert float(compiled) == float(eager), (step, compiled, eager)
        assert float(compiled) == pytest.approx(float(cpu), rel=1e-5), (step, compiled, cpu)
    for tag, kinds in (("tp", {"forward", "backward"}), ("funcol", {"inference"})):
        modules = [row for row in rows if row[:2] == ["modules", tag]]
        assert sorted(row[2] for row in modules) == ["0", "1", "2", "3"], result.stdout
        for row in modules:
            counts = dict(item.split("=") for item in row[3:])
            assert {k for k in kinds if any(k in name for name in counts)} == kinds, row
            assert set(counts.values()) == {"1"}, row  # one executable per graph
    funcol = [row for row in rows if row[0] == "funcol"]
    assert len(funcol) == 4, result.stdout
    for _, rank, to_eager, to_cpu in funcol:
        assert float(to_eager) == 0.0, (rank, to_eager)
        assert float(to_cpu) < 1e-5, (rank, to_cpu)
    streams = [row for row in rows if row[0] == "streams"]
    assert len(streams) == 4, result.stdout
    for _, rank, to_eager, total in streams:
        assert float(to_eager) == 0.0 and float(total) == 0 + 1 + 2 + 3, (rank, to_eager, total)
    found = [row for row in rows if row[0] == "collective_modules"]
    assert len(found) == 4, result.stdout
    for _, rank, tp_modules, funcol_modules in found:
        assert int(tp_modules) >= 2 and int(funcol_modules) >= 1, (rank, tp_modules, funcol_modules)
