"""`vtrn run` is torchrun: its options, `-m`, `--no-python`, rendezvous, restarts, logs and exit
status, with workers started by the interpreter of the environment that runs it, and bad
arguments refused in one line with exit status 2."""

import os
import pathlib
import re
import socket
import subprocess
import sys
import sysconfig

import pytest

# torchrun starts workers with `python -u`: print() writes each piece on its own, so the workers
# write each line with one write() (atomic on a pipe) and lines of ranks never interleave.
SHOW = """\
import os, sys, torch
x = torch.ones(1, device="neuron")
sys.stdout.write(f"worker {os.environ['RANK']} {os.environ['LOCAL_RANK']} "
                 f"{os.environ['WORLD_SIZE']} {x.device} {sys.argv[1:]} {__name__}\\n")
"""


def vtrn_run(*args, cwd=None, env=None, timeout=110):
    return subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def workers(stdout):
    return sorted(line for line in stdout.splitlines() if line.startswith("worker"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def show(tmp_path):
    path = tmp_path / "show.py"
    path.write_text(SHOW)
    return path


def test_script_args_reach_each_worker_on_its_own_core(show):
    result = vtrn_run("--nproc-per-node", "2", str(show), "--lr", "0.1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert workers(result.stdout) == [
        "worker 0 0 2 neuron:0 ['--lr', '0.1'] __main__",
        "worker 1 1 2 neuron:1 ['--lr', '0.1'] __main__",
    ]


def test_module_runs_with_dash_m_from_the_working_directory(tmp_path):
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(SHOW)
    result = vtrn_run("--nproc-per-node", "2", "-m", "trainer.train", "--steps", "3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert workers(result.stdout) == [
        "worker 0 0 2 neuron:0 ['--steps', '3'] __main__",
        "worker 1 1 2 neuron:1 ['--steps', '3'] __main__",
    ]


def test_no_python_runs_the_program_itself(tmp_path):
    # No vtrn wrapper in between: the program picks its core as a CUDA script picks its GPU.
    script = tmp_path / "own_core.py"
    script.write_text(
        "import os, torch\ntorch.neuron.set_device(int(os.environ['LOCAL_RANK']))\n" + SHOW
    )
    result = vtrn_run("--nproc-per-node", "2", "--no-python", sys.executable, str(script), "a")
    assert result.returncode == 0, result.stderr[-3000:]
    assert workers(result.stdout) == [
        "worker 0 0 2 neuron:0 ['a'] __main__",
        "worker 1 1 2 neuron:1 ['a'] __main__",
    ]


def test_workers_use_the_active_virtualenv_interpreter(tmp_path, show):
    # A virtualenv that sees this environment's packages and has one of its own; `vtrn` runs
    # from outside it (as through a pyenv shim), the virtualenv is active.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = sysconfig.get_paths()["purelib"]
    pathlib.Path(purelib, "outer.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    pathlib.Path(purelib, "only_in_venv.py").write_text(
        "import sys, torch\n"
        "sys.stdout.write(f'worker {sys.executable} {torch.neuron.current_device()}\\n')\n"
    )
    env = dict(os.environ, VIRTUAL_ENV=str(venv), PATH=f"{venv}/bin:{os.environ['PATH']}")
    result = vtrn_run("--nproc-per-node", "2", "-m", "only_in_venv", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert workers(result.stdout) == [f"worker {python} 0", f"worker {python} 1"]


def test_static_rendezvous_with_master_addr_and_port(show):
    port = str(free_port())
    result = vtrn_run(
        "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", port, str(show)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(workers(result.stdout)) == 2


def test_elastic_node_range_with_c10d_rendezvous(show):
    # --nnodes MIN:MAX: one node joins, the rendezvous closes after last_call_timeout.
    endpoint = f"127.0.0.1:{free_port()}"
    result = vtrn_run(
        "--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", endpoint, "--rdzv-id", "elastic-test",
        "--rdzv-conf", "last_call_timeout=1", str(show),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert [line.split()[1:4] for line in workers(result.stdout)] == [
        ["0", "0", "2"],
        ["1", "1", "2"],
    ]


def test_max_restarts_restarts_the_workers(tmp_path):
    script = tmp_path / "flaky.py"
    # torchrun stops the whole group as soon as one worker fails, so each
    # worker writes its line and waits for the other's marker before the
    # first attempt fails; otherwise a slow rank is killed before it prints.
    script.write_text(
        "import os, sys, time, pathlib\n"
        "attempt = int(os.environ['TORCHELASTIC_RESTART_COUNT'])\n"
        "rank = os.environ['LOCAL_RANK']\n"
        "sys.stdout.write(f'attempt {attempt} {rank}\\n')\n"
        "sys.stdout.flush()\n"
        f"marks = pathlib.Path({str(tmp_path)!r})\n"
        "(marks / f'{attempt}-{rank}').touch()\n"
        "deadline = time.monotonic() + 60\n"
        "while attempt == 0 and len(list(marks.glob('0-*'))) < 2:\n"
        "    assert time.monotonic() < deadline, 'the other worker never started'\n"
        "    time.sleep(0.01)\n"
        "sys.exit(1 if attempt == 0 else 0)\n"
    )
    result = vtrn_run("--nproc-per-node", "2", "--max-restarts", "1", str(script))
    assert result.returncode == 0, result.stderr[-3000:]
    attempts = sorted(re.findall(r"attempt (\d) (\d)", result.stdout))
    assert attempts == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]


def test_log_dir_and_redirects_write_each_worker_output_to_files(tmp_path, show):
    logs = tmp_path / "logs"
    result = vtrn_run(
        "--nproc-per-node", "2", "--log-dir", str(logs), "--redirects", "3", str(show)
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert workers(result.stdout) == []  # redirected, not shown
    outputs = sorted(logs.rglob("stdout.log"))
    assert len(outputs) == 2
    texts = sorted(p.read_text().strip() for p in outputs)
    assert texts == ["worker 0 0 2 neuron:0 [] __main__", "worker 1 1 2 neuron:1 [] __main__"]


def test_exit_status_is_torchruns(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.exit(3)\n")
    ours = vtrn_run("--nproc-per-node", "1", str(script))
    theirs = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1"]
        + [str(script)],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert theirs.returncode != 0
    assert ours.returncode == theirs.returncode
    ok = tmp_path / "ok.py"
    ok.write_text("pass\n")
    assert vtrn_run("--nproc-per-node", "1", str(ok)).returncode == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--nnodes", "abc", "x.py"], "--nnodes abc is not a node count"),
        (["--nnodes", "3:2", "x.py"], "--nnodes 3:2 is not a node count"),
        ([], "missing the training script"),
        (["no_such_script.py"], "script 'no_such_script.py' does not exist"),
        (["-m", "no_such_module.train"], "-m no_such_module.train: no module named"),
        (["--no-python", "no-such-program"], "--no-python no-such-program: no such executable"),
        (["--nproc-per-node", "two", "x.py"], "--nproc-per-node two is not a process count"),
        (["--max-restarts", "x", "x.py"], "--max-restarts x must be an integer >= 0"),
        (["--master-port", "70000", "x.py"], "--master-port 70000 must be a port"),
        (["--start-method", "thread", "x.py"], "--start-method thread is not one of"),
        (["--lnc", "3", "x.py"], "--lnc 3 is not a logical NeuronCore setting"),
        (["-m", "--no-python", "x"], "-m/--module and --no-python exclude each other"),
        (["--bogus", "x.py"], "unrecognized arguments: --bogus"),
        (["--nproc-per-node"], "expected one argument"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, argv, message):
    result = vtrn_run(*argv, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("vtrn run: ") and message in lines[0], lines[0]
    assert "Traceback" not in result.stderr
