"""``vtrn plan``: which FSDP / TP / PP / HSDP layout to train a model with on Trainium.

Prints every evaluated layout's per-rank memory and step time, ranked by tokens per second,
then the recommended mesh as Python and the reason (``vtrn.plan`` computes them).

Exit status: 0 with a recommendation (or a layout that fits, with ``--layout``), 1 when nothing
fits (the output says why and what would), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from vtrn.render.canvas import check_picture_path

EXIT_NOTHING_FITS = 1


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "plan",
        help="choose an FSDP/TP/PP/HSDP layout: per-rank memory, step time, tokens/s",
        description="Per-rank memory and step time of every pp x replicate x shard x tp layout of the cluster "
        "on the modeled hardware, ranked by tokens per second, with the recommended DeviceMesh and the reason.",
    )
    p.add_argument(
        "--model",
        required=True,
        help="a preset (llama2-7b, llama3-70b, qwen3-32b, mixtral-8x7b, "
        "gpt3-175b, ...) or a JSON model file (see docs/planner.md)",
    )
    p.add_argument("--nodes", type=int, default=1, help="instances (default 1)")
    p.add_argument(
        "--instance", default="trn2.48xlarge", help="instance type (default trn2.48xlarge)"
    )
    p.add_argument(
        "--lnc", type=int, default=0, help="logical NeuronCore setting (default: the instance's)"
    )
    p.add_argument("--seq", type=int, default=4096, help="sequence length in tokens (default 4096)")
    p.add_argument(
        "--global-batch", type=int, default=1024, help="sequences per optimizer step (default 1024)"
    )
    p.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        help="fix the micro-batch, at least 1 (default: search 1, 2, 4, 8)",
    )
    p.add_argument(
        "--checkpointing",
        choices=("none", "selective", "full"),
        help="fix activation checkpointing (default: search all three)",
    )
    p.add_argument(
        "--precision",
        default="bf16-fp32-master",
        choices=("bf16-fp32-master", "bf16"),
        help="bf16 compute with fp32 master weights and AdamW state (default), or pure bf16",
    )
    p.add_argument(
        "--schedule",
        default="1f1b",
        choices=("1f1b", "gpipe"),
        help="pipeline schedule (default 1f1b)",
    )
    p.add_argument("--prefetch", type=int, default=1, help="FSDP units gathered ahead (default 1)")
    p.add_argument(
        "--no-sequence-parallel", action="store_true", help="TP without sequence parallelism"
    )
    p.add_argument(
        "--no-pp", action="store_true", help="leave pipeline parallelism out of the search"
    )
    p.add_argument(
        "--no-placement-search",
        action="store_true",
        help="only default (row-major) placements; do not search for a routable rank order",
    )
    p.add_argument(
        "--layout",
        metavar="pp=1,replicate=1,shard=64,tp=8",
        help="evaluate exactly this layout (micro_batch= and checkpointing= may be added)",
    )
    p.add_argument("--top", type=int, default=10, help="layouts to show (default 10)")
    p.add_argument("--json", action="store_true", help="print the layouts as JSON, best first")
    p.add_argument(
        "--out",
        metavar="FILE.png|FILE.svg",
        help="draw the memory and time breakdown of the top layouts",
    )
    p.set_defaults(handler=run)


def _check_ranges(args: argparse.Namespace) -> None:
    """Every integer flag within what the planner models, before it reaches the native planner
    (where a value beyond a C++ int would be a TypeError, not a message)."""
    from vtrn import _native, topology
    from vtrn.cli._args import check_int

    most = _native.plan.MAX_WORKLOAD_VALUE
    check_int("--nodes", args.nodes, 1, topology.max_nodes(), " (instances of one cluster)")
    check_int("--lnc", args.lnc, 0, 2, " (0: the instance's default; 1 or 2)")
    check_int("--seq", args.seq, 1, most, " tokens (2^24 is the longest sequence planned)")
    check_int("--global-batch", args.global_batch, 1, most, " sequences (2^24 at most)")
    if args.micro_batch is not None:
        check_int("--micro-batch", args.micro_batch, 1, most, " sequences (2^24 at most)")
    check_int("--prefetch", args.prefetch, 0, most, " FSDP units")
    check_int("--top", args.top, 1, 2**31 - 1, " layouts")


def run(args: argparse.Namespace) -> int:
    from vtrn import plan
    from vtrn.render.plan import layouts_json, report_lines, save_picture

    if args.nodes < 1:
        raise ValueError(f"--nodes {args.nodes}: the cluster needs at least one node")
    if args.top < 1:
        raise ValueError(f"--top {args.top}: show at least one layout")
    _check_ranges(args)
    check_picture_path(args.out)
    layout = args.layout
    if layout and args.micro_batch and "micro_batch" not in layout:
        layout += f",micro_batch={args.micro_batch}"
    if layout and args.checkpointing and "checkpointing" not in layout:
        layout += f",checkpointing={args.checkpointing}"
    result = plan.plan(
        args.model,
        instance=args.instance,
        lnc=args.lnc,
        nodes=args.nodes,
        seq=args.seq,
        global_batch=args.global_batch,
        precision=args.precision,
        schedule=args.schedule,
        sequence_parallel=not args.no_sequence_parallel,
        prefetch=args.prefetch,
        layout=layout,
        top=args.top,
        checkpointing=[args.checkpointing] if args.checkpointing else ["none", "selective", "full"],
        micro_batches=[args.micro_batch] if args.micro_batch else [1, 2, 4, 8],
        allow_pp=not args.no_pp,
        search_placement=not args.no_placement_search,
    )
    best = result.layouts[0] if result.layouts else None
    if args.layout and best is not None and not best.batch_ok:
        raise ValueError(best.batch_error)
    if args.layout and best is not None and not best.tp_ok:
        raise ValueError(best.tp_error)
    if (
        args.layout is None
        and not result.layouts
        and result.rejected
        and not result.rejected[0].batch_ok
    ):
        raise ValueError(result.why_nothing)
    if args.out:
        save_picture(result, result.layouts or result.rejected, args.out)
    if args.json:
        json.dump(layouts_json(result.layouts), sys.stdout, indent=2)
        print()
        if result.why_nothing:
            print(f"vtrn plan: nothing fits: {result.why_nothing}", file=sys.stderr)
    else:
        print("\n".join(report_lines(result, given_layout=bool(args.layout))))
        if args.out:
            print(f"wrote {args.out}")
    return EXIT_NOTHING_FITS if result.why_nothing else 0
