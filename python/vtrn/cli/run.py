"""``vtrn run``: torchrun for emulated Trainium nodes.

It takes torchrun's options and hands them to ``torch.distributed.run`` unchanged, with two
differences: ``--nproc-per-node`` defaults to every logical core of the instance, and a
single-node launch without rendezvous options is ``--standalone``. Every process sees all the
cores of its node, as every process sees every GPU of its node under CUDA, and each process's
device is its own core: local rank i starts on neuron:i (logical core i), so
``torch.device("neuron")`` and ``torch.neuron.set_device(int(os.environ["LOCAL_RANK"]))`` name
the same core. A core belongs to one process; a second process that uses it is refused.

    vtrn run --nproc-per-node 8 train.py --steps 10
    vtrn run --nproc-per-node 8 -m torchtitan.train --job.config_file llama3_8b.toml
    vtrn run --nnodes 2 --node-rank 0 --master-addr host --master-port 29500 train.py
    vtrn run --nnodes 1:4 --rdzv-backend c10d --rdzv-endpoint host:29400 --rdzv-id job train.py

Workers run with this interpreter (``sys.executable``), or with the active virtualenv's when
``vtrn`` was found outside it, so the packages of that virtualenv are theirs. The exit status is
torchrun's.
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import shutil
import subprocess
import sys

from vtrn import _native
from vtrn.cli import CommandError

DEFAULT_INSTANCE = "trn2.48xlarge"
# What each process torchrun starts runs: this module, as `python -m vtrn.cli.run SCRIPT`.
WORKER_MODULE = "vtrn.cli.run"

# torchrun's options that take a value, forwarded as given: (flags, help).
_VALUE_OPTIONS = (
    (("--nnodes",), "nodes, or MIN:MAX for an elastic job (default 1)"),
    (
        ("--nproc-per-node", "--nproc_per_node"),
        "processes per node, at most one per logical core; 'auto' or 'neuron' for every core "
        "(default: every logical core of the instance)",
    ),
    (("--rdzv-backend", "--rdzv_backend"), "rendezvous backend (static, c10d, etcd)"),
    (("--rdzv-endpoint", "--rdzv_endpoint"), "rendezvous HOST:PORT"),
    (("--rdzv-id", "--rdzv_id"), "job id shared by the nodes of one job"),
    (("--rdzv-conf", "--rdzv_conf"), "rendezvous options, KEY=VALUE,..."),
    (("--max-restarts", "--max_restarts"), "restarts of the worker group before failing"),
    (("--monitor-interval", "--monitor_interval"), "seconds between worker checks"),
    (("--start-method", "--start_method"), "spawn, fork or forkserver"),
    (("--event-log-handler", "--event_log_handler"), "torchelastic event handler"),
    (("--role",), "user-defined role of the workers"),
    (("--log-dir", "--log_dir"), "directory for the workers' logs"),
    (("-r", "--redirects"), "redirect workers' stdout/stderr to files: 0-3 or RANK:N,..."),
    (("-t", "--tee"), "tee workers' stdout/stderr to files and the console: 0-3 or RANK:N,..."),
    (
        ("--local-ranks-filter", "--local_ranks_filter"),
        "local ranks whose output is shown: 0,1,...",
    ),
    (("--node-rank", "--node_rank"), "rank of this node (static rendezvous)"),
    (("--master-addr", "--master_addr"), "address of node 0 (static rendezvous)"),
    (("--master-port", "--master_port"), "port of node 0 (static rendezvous)"),
    (("--local-addr", "--local_addr"), "address of this node"),
    (("--logs-specs", "--logs_specs"), "torchrun.logs_specs entry point for the logs layout"),
    (("--numa-binding", "--numa_binding"), "NUMA affinity mode"),
    (("--signals-to-handle", "--signals_to_handle"), "signals forwarded to the workers"),
    (("--shutdown-timeout", "--shutdown_timeout"), "seconds workers get to exit"),
)
# torchrun's flags, forwarded as given.
_FLAG_OPTIONS = (
    (("--standalone",), "single-node job with a local rendezvous on a free port"),
    (("-m", "--module"), "run SCRIPT as a module, as `python -m` does"),
    (("--no-python", "--no_python"), "run SCRIPT as an executable, without python"),
    (("--run-path", "--run_path"), "run SCRIPT with runpy.run_path"),
    (("--virtual-local-rank", "--virtual_local_rank"), "give every worker LOCAL_RANK 0"),
)
_START_METHODS = ("spawn", "fork", "forkserver")
# Run by the workers' interpreter: exit status 0 when `python -m NAME` would find NAME.
_FIND_MODULE = (
    "import importlib.util, sys; sys.path.insert(0, ''); "
    "sys.exit(importlib.util.find_spec(sys.argv[1]) is None)"
)
_NONNEGATIVE_INT = ("max_restarts", "node_rank")
_NONNEGATIVE_FLOAT = ("monitor_interval", "shutdown_timeout")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="torchrun on emulated Trainium nodes (one core per process)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--instance", default=None, help="instance type (NEURON_RT_FAKE_INSTANCE_TYPE)")
    p.add_argument(
        "--lnc", default=None, help="logical NeuronCore setting (NEURON_LOGICAL_NC_CONFIG)"
    )
    for flags, help_text in _VALUE_OPTIONS:
        p.add_argument(*flags, default=None, help=help_text)
    for flags, help_text in _FLAG_OPTIONS:
        p.add_argument(*flags, action="store_true", help=help_text)
    p.add_argument("training_script", nargs="?", metavar="SCRIPT", help="script, module or program")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER, metavar="ARGS")
    p.set_defaults(handler=run)


def _option_name(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _cores_per_node(env) -> int:
    """Logical cores of one node of the configured instance (from the hw model; no torch)."""
    instance = env.get("NEURON_RT_FAKE_INSTANCE_TYPE", DEFAULT_INSTANCE)
    lnc_text = env.get("NEURON_LOGICAL_NC_CONFIG", "") or "0"
    if not lnc_text.isdigit():
        raise CommandError(
            f"NEURON_LOGICAL_NC_CONFIG='{lnc_text}' is not a logical NeuronCore setting; use 1 or 2"
        )
    try:
        return _native.model.Cluster(instance, int(lnc_text), 1).world
    except ValueError as err:
        raise CommandError(str(err)) from None


def _visible_core_count(env, cores: int) -> int:
    """How many cores each process sees: NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES keep
    the meaning the runtime gives them; without them, every core of the node."""
    visible = env.get("NEURON_RT_VISIBLE_CORES", "").strip()
    if visible:
        seen = set()
        for item in visible.split(","):
            match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", item)
            if not match:
                raise CommandError(
                    f"NEURON_RT_VISIBLE_CORES='{visible}' is not a core list; use an index "
                    '("5"), an inclusive range ("4-7") or a comma list of them ("0-3,8").'
                )
            first, last = int(match[1]), int(match[2] or match[1])
            if last < first or last >= cores:
                raise CommandError(
                    f"NEURON_RT_VISIBLE_CORES='{visible}' names cores outside 0-{cores - 1}, the "
                    f"logical cores of this instance."
                )
            seen.update(range(first, last + 1))
        return len(seen)
    num = env.get("NEURON_RT_NUM_CORES", "").strip()
    if num:
        if not num.isdigit() or int(num) > cores:
            raise CommandError(
                f"NEURON_RT_NUM_CORES='{num}' must be a count from 0 (all) to {cores}."
            )
        return int(num) or cores
    return cores


def _check_nnodes(text: str) -> int:
    """The largest node count of --nnodes N or MIN:MAX."""
    match = re.fullmatch(r"(\d+)(?::(\d+))?", text.strip())
    if not match or int(match[1]) < 1 or (match[2] and int(match[2]) < int(match[1])):
        raise CommandError(
            f"--nnodes {text} is not a node count; use N (--nnodes 2) or MIN:MAX with "
            f"1 <= MIN <= MAX (--nnodes 1:4)."
        )
    return int(match[2] or match[1])


def _check_values(args: argparse.Namespace) -> None:
    for dest in _NONNEGATIVE_INT:
        value = getattr(args, dest)
        if value is not None and not re.fullmatch(r"\d+", value.strip()):
            raise CommandError(f"{_option_name(dest)} {value} must be an integer >= 0.")
    for dest in _NONNEGATIVE_FLOAT:
        value = getattr(args, dest)
        if value is not None:
            try:
                ok = float(value) >= 0
            except ValueError:
                ok = False
            if not ok:
                raise CommandError(f"{_option_name(dest)} {value} must be a number >= 0.")
    if args.master_port is not None and not (
        args.master_port.isdigit() and int(args.master_port) <= 65535
    ):
        raise CommandError(f"--master-port {args.master_port} must be a port from 0 to 65535.")
    if args.start_method is not None and args.start_method not in _START_METHODS:
        raise CommandError(
            f"--start-method {args.start_method} is not one of {', '.join(_START_METHODS)}."
        )
    if args.lnc is not None and args.lnc not in ("1", "2"):
        raise CommandError(f"--lnc {args.lnc} is not a logical NeuronCore setting; use 1 or 2.")
    if args.module and args.no_python:
        raise CommandError("-m/--module and --no-python exclude each other: choose one.")


def _nproc(args: argparse.Namespace, env, cores: int, visible: int) -> int:
    text = args.nproc_per_node or env.get("PET_NPROC_PER_NODE") or str(visible)
    instance = env.get("NEURON_RT_FAKE_INSTANCE_TYPE", DEFAULT_INSTANCE)
    if text in ("auto", "neuron"):
        return visible
    if not text.isdigit():
        raise CommandError(
            f"--nproc-per-node {text} is not a process count; use 1 to {visible}, or 'auto'."
        )
    nproc = int(text)
    if not 1 <= nproc <= cores:
        raise CommandError(
            f"--nproc-per-node {nproc} does not fit: {instance} has {cores} logical cores per "
            f"node, one process each. Use 1 to {cores}, or add nodes."
        )
    if nproc > visible:
        raise CommandError(
            f"--nproc-per-node {nproc} does not fit: each process sees {visible} cores "
            f"(NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES), one process each. Use 1 to "
            f"{visible}, or unset them."
        )
    return nproc


def _worker_python(env) -> str:
    """The workers' interpreter: this one, unless a virtualenv is active and this is not its
    interpreter (``vtrn`` found outside it, through a pyenv shim or a system install) and its
    interpreter can run vtrn: then the virtualenv's, whose packages ``python`` would import."""
    venv = env.get("VIRTUAL_ENV")
    if venv and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        candidate = os.path.join(venv, "bin", "python")
        if os.path.isfile(candidate):
            probe = subprocess.run(
                [candidate, "-c", "import vtrn.cli.run"], env=env, capture_output=True
            )
            if probe.returncode == 0:
                return candidate
    return sys.executable


def _check_target(args: argparse.Namespace, python: str, env) -> None:
    target = args.training_script
    if target is None:
        raise CommandError(
            "missing the training script: vtrn run [OPTIONS] SCRIPT [ARGS...] "
            "(or -m MODULE, or --no-python PROGRAM)"
        )
    if args.module:
        # The workers run `python -m`, which searches the working directory first.
        top = target.split(".")[0]
        probe = subprocess.run(
            [python, "-c", _FIND_MODULE, top], env=env, capture_output=True, cwd=os.getcwd()
        )
        if not top or probe.returncode != 0:
            raise CommandError(
                f"-m {target}: no module named '{top}' for {python}; install it in that "
                f"environment."
            )
    elif args.no_python:
        if shutil.which(target) is None:
            raise CommandError(f"--no-python {target}: no such executable (not found on PATH).")
    elif os.path.isdir(target):
        raise CommandError(f"script '{target}' is a directory: name the Python file to run.")
    elif not os.path.isfile(target):
        raise CommandError(f"script '{target}' does not exist (cwd {os.getcwd()}).")


def _torchrun_args(args: argparse.Namespace, nproc: int) -> list[str]:
    """torchrun's command line: every option as given, then the workers' program."""
    out = ["--nproc-per-node", str(nproc)]
    for flags, _ in _VALUE_OPTIONS:
        dest = flags[-1].lstrip("-").replace("-", "_")
        value = getattr(args, dest)
        if dest != "nproc_per_node" and value is not None:
            out += [_option_name(dest), value]
    for flags, _ in _FLAG_OPTIONS:
        dest = flags[-1].lstrip("-").replace("-", "_")
        if getattr(args, dest) and dest not in ("module", "no_python", "run_path"):
            out.append(_option_name(dest))
    rendezvous = (args.rdzv_backend, args.rdzv_endpoint, args.master_port, args.master_addr)
    single_node = (args.nnodes or "1").strip() in ("1", "1:1")
    if not args.standalone and single_node and all(v is None for v in rendezvous):
        out.append("--standalone")  # a free port, so concurrent single-node jobs never clash
    if args.no_python:
        return [*out, "--no-python", args.training_script, *args.training_script_args]
    worker = ["-m", args.training_script] if args.module else [args.training_script]
    if args.run_path:
        # runpy runs this file as __main__ in each worker: the same pinning, then the target.
        return [*out, "--run-path", os.path.abspath(__file__), *worker, *args.training_script_args]
    return [*out, "-m", WORKER_MODULE, *worker, *args.training_script_args]


def run(args: argparse.Namespace) -> int:
    """Replaces this process with torchrun, whose workers run ``python -m vtrn.cli.run``."""
    env = dict(os.environ)
    if args.instance:
        env["NEURON_RT_FAKE_INSTANCE_TYPE"] = args.instance
    _check_values(args)
    if args.lnc is not None:
        env["NEURON_LOGICAL_NC_CONFIG"] = args.lnc
    if args.nnodes is not None:
        _check_nnodes(args.nnodes)
    cores = _cores_per_node(env)
    nproc = _nproc(args, env, cores, _visible_core_count(env, cores))
    python = _worker_python(env)
    _check_target(args, python, env)
    # torchrun starts its workers with its own interpreter (sys.executable there).
    command = [python, "-m", "torch.distributed.run", *_torchrun_args(args, nproc)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(python, command, env)
    return 0  # not reached


def _worker_main() -> None:
    """Runs in each process torchrun starts: select the local rank's core as the process's
    device, then run the script (or ``-m`` module) as ``__main__``."""
    target, *target_args = sys.argv[1:]
    module = None
    if target == "-m":
        module, *target_args = target_args
    import torch

    if "LOCAL_RANK" in os.environ and torch.neuron.is_available():
        from vtrn.distributed.placement import adopt_local_device

        adopt_local_device(int(os.environ.get("RANK", os.environ["LOCAL_RANK"])))
    if module is not None:
        sys.argv = [module, *target_args]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target, *target_args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    _worker_main()
