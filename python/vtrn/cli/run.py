"""``vtrn run``: launch a training script on one or more emulated Trainium nodes.

A thin layer over ``torch.distributed.run`` (torchrun): it starts the processes, and each
process pins itself to its logical core before the script runs, as the Neuron runtime
expects: local rank i runs on logical core i of its node (``NEURON_RT_VISIBLE_CORES=i``),
so ``torch.neuron.current_device()`` is 0 and the core is the rank's own.

    vtrn run --nproc-per-node 8 train.py --steps 10
    vtrn run --nnodes 2 --node-rank 0 --rdzv-endpoint host:29500 --nproc-per-node 64 train.py
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import sys

from vtrn import _native
from vtrn.cli import CommandError

DEFAULT_INSTANCE = "trn2.48xlarge"
# What each process torchrun starts runs: this module, as `python -m vtrn.cli.run SCRIPT`.
WORKER_MODULE = "vtrn.cli.run"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="launch a script on emulated Trainium nodes (torchrun, one core per process)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--nnodes", default="1", help="nodes, or MIN:MAX (torchrun's --nnodes)")
    p.add_argument(
        "--nproc-per-node",
        type=int,
        default=None,
        help="processes per node (default: every logical core of the instance)",
    )
    p.add_argument("--instance", default=None, help="instance type (NEURON_RT_FAKE_INSTANCE_TYPE)")
    p.add_argument(
        "--lnc",
        type=int,
        default=None,
        help="logical NeuronCore setting (NEURON_LOGICAL_NC_CONFIG)",
    )
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--rdzv-endpoint", default=None, help="host:port of the rendezvous (multi-node)")
    p.add_argument("--master-port", type=int, default=None)
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    p.set_defaults(handler=run)


def _cores_per_node(env) -> int:
    """Logical cores of one node of the configured instance (from the hw model; no torch)."""
    instance = env.get("NEURON_RT_FAKE_INSTANCE_TYPE", DEFAULT_INSTANCE)
    lnc_text = env.get("NEURON_LOGICAL_NC_CONFIG", "") or "0"
    if not lnc_text.isdigit():
        raise ValueError(
            f"NEURON_LOGICAL_NC_CONFIG='{lnc_text}' is not a logical NeuronCore setting; use 1 or 2"
        )
    return _native.model.Cluster(instance, int(lnc_text), 1).world


def _check_launch(args: argparse.Namespace) -> None:
    """What torchrun would only refuse with a traceback: a script that is not there, an --nnodes
    that is not N or MIN:MAX."""
    if not os.path.isfile(args.script):
        problem = "is a directory" if os.path.isdir(args.script) else "does not exist"
        raise CommandError(f"script {args.script} {problem}; give the path of a Python file")
    match = re.fullmatch(r"(\d{1,9})(?::(\d{1,9}))?", args.nnodes)
    low, high = (int(match[1]), int(match[2] or match[1])) if match else (0, 0)
    most = _native.model.MAX_NODES
    if not 1 <= low <= high <= most:
        raise CommandError(
            f"--nnodes {args.nnodes} is not a node count; give N or MIN:MAX with "
            f"1 <= MIN <= MAX <= {most}"
        )


def run(args: argparse.Namespace) -> int:
    """Replaces this process with torchrun, whose workers run ``python -m vtrn.cli.run``."""
    env = dict(os.environ)
    if args.instance:
        env["NEURON_RT_FAKE_INSTANCE_TYPE"] = args.instance
    if args.lnc is not None:
        env["NEURON_LOGICAL_NC_CONFIG"] = str(args.lnc)
    try:
        cores = _cores_per_node(env)
    except ValueError as err:
        raise CommandError(str(err)) from None
    nproc = args.nproc_per_node if args.nproc_per_node is not None else cores
    if not 1 <= nproc <= cores:
        raise CommandError(
            f"--nproc-per-node {nproc} does not fit: {env.get('NEURON_RT_FAKE_INSTANCE_TYPE', DEFAULT_INSTANCE)}"
            f" has {cores} logical cores per node, one process each. Use 1 to {cores}, or add nodes."
        )
    _check_launch(args)
    env.pop("NEURON_RT_VISIBLE_CORES", None)
    env.pop("NEURON_RT_NUM_CORES", None)
    torchrun = [
        "--nnodes",
        str(args.nnodes),
        "--nproc-per-node",
        str(nproc),
        "--node-rank",
        str(args.node_rank),
    ]
    if args.rdzv_endpoint:
        torchrun += ["--rdzv-backend", "c10d", "--rdzv-endpoint", args.rdzv_endpoint]
    else:
        torchrun += (
            ["--standalone"]
            if args.master_port is None
            else ["--master-port", str(args.master_port)]
        )
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        *torchrun,
        "-m",
        WORKER_MODULE,
        args.script,
        *args.script_args,
    ]
    os.execvpe(sys.executable, command, env)


def _worker_main() -> None:
    """Runs in each process torchrun starts: pin to the local rank's core, then run the script.

    The core is chosen before torch is imported: importing torch loads vtrn, which reads
    NEURON_RT_VISIBLE_CORES once."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    os.environ["NEURON_RT_VISIBLE_CORES"] = str(local_rank)
    import torch

    # The process's one device is initialized, so DeviceMesh keeps it instead of calling
    # set_device(LOCAL_RANK), which names a device this process does not see.
    torch.neuron.init()
    script, *script_args = sys.argv[1:]
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    _worker_main()
