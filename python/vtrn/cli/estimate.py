"""``vtrn estimate``: what a training script's steps would cost on Trainium, without the hardware.

    vtrn estimate -- examples/llama_step.py --size bench
    vtrn estimate --nodes 4 --nproc-per-node 64 --ranks 0 -- examples/train_llama.py
    vtrn estimate --instance trn1.32xlarge --json -m mypackage.train --steps 100

Each listed rank of the NODES x NPROC_PER_NODE world runs in its own process in shape-only
execution (``VTRN_EXECUTION=shapes``): tensors have device memory in the allocator's
accounting but no data, kernels advance the modeled device clock without computing, and
collectives run on a fake process group that moves no data while the ``neuron`` backend checks
each group's routing on its real placement and charges its modeled time. A step is one
``optimizer.step()``; the run stops after ``--steps`` of them. A script that never initializes a
process group runs as one rank on one core.

By default one representative rank per distinct role runs: rank 0 first, then, when the
script's DeviceMesh has a pipeline axis (named ``pp``), the first rank of the last stage and of
stage 1 (the middle stages); TP, FSDP and data-parallel ranks of a stage are symmetric.
``--layout`` gives the mesh in the planner's syntax instead (``pp=2,shard=2,tp=2``, axes
outermost first, ranks row-major), ``--ranks`` the ranks themselves.

Output: per rank its steps (time, compute, collectives, exposed collectives, idle), its peak
memory by category and its model FLOPs per step; ``step_time_s`` is the median step after the
first of the slowest rank, and ``mfu`` its model FLOPs over that time and one rank's peak.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from vtrn import _native
from vtrn.cli import CommandError

DEFAULT_INSTANCE = "trn2.48xlarge"
MAX_NODES = 4096
MAX_STEPS = 10000
WORKER_MODULE = "vtrn.estimate"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate",
        help="the memory and modeled step time of a training script, in shape-only execution",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--nodes", default="1", help="instances in the world (default 1)")
    p.add_argument(
        "--nproc-per-node", default="1", help="processes (ranks) per instance (default 1)"
    )
    p.add_argument(
        "--ranks",
        default=None,
        help="ranks to run, R[,R...] (default: one per distinct role)",
    )
    p.add_argument(
        "--layout",
        default=None,
        help="the script's mesh in the planner's syntax (pp=2,shard=2,tp=2), to pick one rank per role",
    )
    p.add_argument("--instance", default=DEFAULT_INSTANCE, help="instance type (trn2.48xlarge)")
    p.add_argument("--lnc", default=None, help="Logical NeuronCore setting, 1 or 2")
    p.add_argument("--steps", default="3", help="optimizer steps to run (default 3)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--trace", default=None, help="write the modeled timeline as a Chrome trace")
    p.add_argument("-m", "--module", action="store_true", help="run SCRIPT as a module")
    p.add_argument("training_script", nargs="?", metavar="SCRIPT", help="script or module")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER, metavar="ARGS")
    p.set_defaults(handler=run)


def _count(flag: str, text: str, low: int, high: int) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or not low <= int(text) <= high:
        raise CommandError(f"{flag} {text} must be an integer from {low} to {high}.")
    return int(text)


def _cores_per_node(instance: str, lnc: int) -> int:
    try:
        return _native.model.Cluster(instance, lnc, 1).world
    except ValueError as err:
        raise CommandError(str(err)) from None


def _ranks(text: str | None, world: int) -> list[int]:
    if text is None:
        return [0]
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(re.fullmatch(r"\d+", p) for p in parts):
        raise CommandError(f"--ranks {text} must be comma-separated ranks such as 0,5.")
    ranks = []
    for p in parts:
        r = int(p)
        if r >= world:
            raise CommandError(
                f"--ranks {text}: rank {r} is outside the world of {world} ranks (0..{world - 1})."
            )
        if r not in ranks:
            ranks.append(r)
    return ranks


def _layout_roles(text: str, world: int) -> list[tuple[int, str]]:
    from vtrn.estimate import layout_meshes, representative_ranks

    try:
        layout = _native.plan.parse_layout(text)
    except ValueError as err:
        raise CommandError(f"--layout {text}: {err}") from None
    if layout["world"] != world:
        raise CommandError(
            f"--layout {text} has {layout['world']} ranks, but the world has {world} "
            f"(--nodes x --nproc-per-node); give a layout whose degrees multiply to {world}."
        )
    return representative_ranks(layout_meshes(layout))


def _target(args: argparse.Namespace) -> list[str]:
    target = args.training_script
    rest = list(args.training_script_args)
    if target == "--":
        target, rest = (rest[0], rest[1:]) if rest else (None, [])
    if target == "-m" and rest:  # `vtrn estimate -- -m module`
        args.module, target, rest = True, rest[0], rest[1:]
    if target is None:
        raise CommandError(
            "missing the training script: vtrn estimate [OPTIONS] -- SCRIPT [ARGS...] "
            "(or -m MODULE)"
        )
    if args.module:
        return ["-m", target, *rest]
    if os.path.isdir(target):
        raise CommandError(f"script '{target}' is a directory: name the Python file to run.")
    if not os.path.isfile(target):
        raise CommandError(f"script '{target}' does not exist (cwd {os.getcwd()}).")
    return [target, *rest]


def _trace_path(trace: str, rank: int, ranks: list[int]) -> str:
    if len(ranks) == 1:
        return trace
    stem, ext = os.path.splitext(trace)
    return f"{stem}.rank{rank}{ext or '.json'}"


def _run_rank(target, rank, world, nproc, lnc, args, steps, trace) -> dict:
    env = dict(os.environ)
    env.update(
        VTRN_EXECUTION="shapes",
        NEURON_RT_FAKE_INSTANCE_TYPE=args.instance,
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank % nproc),
        LOCAL_WORLD_SIZE=str(nproc),
        NODE_RANK=str(rank // nproc),
        GROUP_RANK=str(rank // nproc),
        VTRN_ESTIMATE_STEPS=str(steps),
        VTRN_ESTIMATE_TRACE=trace or "",
    )
    if lnc:
        env["NEURON_LOGICAL_NC_CONFIG"] = str(lnc)
    with tempfile.TemporaryDirectory(prefix="vtrn-estimate-") as tmp:
        out = os.path.join(tmp, "rank.json")
        env["VTRN_ESTIMATE_OUT"] = out
        result = subprocess.run(
            [sys.executable, "-m", WORKER_MODULE, *target], env=env, stdout=sys.stderr
        )
        if result.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(f"rank {rank} failed (exit status {result.returncode})")
        with open(out) as f:
            return json.load(f)


def build_report(instance: str, lnc: int, world: int, ranks: list[dict]) -> dict:
    """The report's summary fields from the ranks' own."""
    step_time = 0.0
    slowest = ranks[0]
    for rank in ranks:
        times = [s["time_s"] for s in rank["steps"]]
        later = times[1:] or times
        median = statistics.median(later) if later else 0.0
        if median >= step_time:
            step_time, slowest = median, rank
    peak = slowest.get("peak_flops", 0.0)
    mfu = slowest["model_flops"] / (step_time * peak) if step_time > 0 and peak > 0 else 0.0
    return {
        "instance": instance,
        "lnc": lnc,
        "world_size": world,
        "ranks": [{k: v for k, v in r.items() if k not in ("peak_flops", "meshes")} for r in ranks],
        "step_time_s": step_time,
        "mfu": mfu,
    }


def run(args: argparse.Namespace) -> int:
    from vtrn.render.estimate import report_lines

    nodes = _count("--nodes", args.nodes, 1, MAX_NODES)
    steps = _count("--steps", args.steps, 1, MAX_STEPS)
    if args.lnc is not None and args.lnc not in ("1", "2"):
        raise CommandError(f"--lnc {args.lnc} is not a logical NeuronCore setting; use 1 or 2.")
    lnc_arg = int(args.lnc) if args.lnc else 0
    cores = _cores_per_node(args.instance, lnc_arg)
    nproc = _count("--nproc-per-node", args.nproc_per_node, 1, cores)
    lnc = _native.model.Cluster(args.instance, lnc_arg, 1).lnc
    world = nodes * nproc
    if args.ranks is not None and args.layout is not None:
        raise CommandError("give --ranks or --layout, not both: --layout picks the ranks.")
    roles: dict[int, str] = {}
    if args.ranks is not None:
        ranks = _ranks(args.ranks, world)
    elif args.layout is not None:
        roles = dict(_layout_roles(args.layout, world))
        ranks = sorted(roles)
    else:
        ranks = [0]  # then one rank per role of the script's own mesh, once rank 0 shows it
    target = _target(args)
    if args.trace is not None:
        folder = os.path.dirname(os.path.abspath(args.trace))
        if not os.path.isdir(folder):
            raise CommandError(f"--trace {args.trace}: folder {folder} does not exist.")
    discover = args.ranks is None and args.layout is None and world > 1
    reports = []
    i = 0
    while i < len(ranks):
        rank = ranks[i]
        # Discovering the roles, rank 0 may turn out to be one of several: its trace is named
        # per rank until the others are known, and renamed if it stays alone.
        trace_ranks = [0, 1] if discover else ranks
        trace = _trace_path(args.trace, rank, trace_ranks) if args.trace else None
        try:
            reports.append(_run_rank(target, rank, world, nproc, lnc, args, steps, trace))
        except RuntimeError as err:
            print(f"vtrn estimate: {err}", file=sys.stderr)
            return 1
        if discover and i == 0:
            from vtrn.estimate import representative_ranks

            roles = dict(representative_ranks(reports[0].get("meshes", [])))
            ranks = [0] + [r for r in sorted(roles) if r != 0]
            if len(ranks) == 1 and trace and os.path.exists(trace):
                os.replace(trace, args.trace)
        i += 1
    for r in reports:
        if r["rank"] in roles:
            r["role"] = roles[r["rank"]]
    report = build_report(args.instance, lnc, world, reports)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(report_lines(report)))
    failed = [r for r in reports if "error" in r]
    for r in failed:
        print(f"vtrn estimate: rank {r['rank']}: {r['error']}", file=sys.stderr)
    return 1 if failed else 0
