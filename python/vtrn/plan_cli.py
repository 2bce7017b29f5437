"""``vtrn plan``: which FSDP / TP / PP / HSDP layout to train a model with on Trainium.

The model is C++ (``vtrn._plan``, layer ``plan``): per-rank memory by part, step time from the
kernel cost model and the collective model, every factorization of the world into
pp x replicate x shard x tp, ranked by tokens per second. This module parses arguments, prints
the table, the recommended mesh as Python and the reason, and draws ``--out`` pictures.

Exit status: 0 with a recommendation (or a layout that fits, with ``--layout``), 1 when nothing
fits (the output says why and what would), 2 for bad input.
"""

from __future__ import annotations

import json
import sys

EXIT_OK = 0
EXIT_NOTHING_FITS = 1

GIB = float(1 << 30)
MEMORY_PARTS = (
    "parameters",
    "gradients",
    "optimizer",
    "gathered",
    "activations",
    "logits",
    "runtime",
    "collectives",
)
TIME_PARTS = (
    "compute",
    "recompute",
    "tp",
    "fsdp_exposed",
    "dp_exposed",
    "pp_p2p",
    "bubble",
    "optimizer",
)
COLOURS = ["#1f77b4", "#aec7e8", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#7f7f7f"]
JSON_FIELDS = (
    "mesh_shape",
    "mesh_axes",
    "pp",
    "replicate",
    "shard",
    "tp",
    "micro_batch",
    "checkpointing",
    "fits",
    "routable",
    "memory_bytes",
    "step_time_s",
    "tokens_per_second",
    "mfu",
    "limiting_resource",
)


def load_plan():
    try:
        from vtrn import _plan
    except ImportError as err:  # pragma: no cover - depends on the install
        raise SystemExit(
            f"vtrn: the native planner vtrn._plan is not available ({err}); build it with `make install`"
        ) from err
    return _plan


def layout_name(d: dict) -> str:
    parts = []
    if d["pp"] > 1:
        parts.append(f"PP{d['pp']}")
    if d["tp"] > 1:
        parts.append(f"TP{d['tp']}")
    if d["replicate"] > 1 and d["shard"] > 1:
        parts.append(f"HSDP{d['replicate']}x{d['shard']}")
    elif d["shard"] > 1:
        parts.append(f"FSDP{d['shard']}")
    elif d["replicate"] > 1:
        parts.append(f"DDP{d['replicate']}")
    return " x ".join(parts) or "1 rank"


def mesh_text(d: dict) -> str:
    shape = ", ".join(str(s) for s in d["mesh_shape"]) + ("," if len(d["mesh_shape"]) == 1 else "")
    axes = ", ".join(f'"{a}"' for a in d["mesh_axes"]) + ("," if len(d["mesh_axes"]) == 1 else "")
    return f"({shape}) ({axes})"


def table_lines(result: dict) -> list[str]:
    head = (
        f"{'#':>2}  {'layout':<18} {'mesh':<42} {'mb':>2} {'ckpt':<9} {'state':>6} {'gathr':>6} {'act':>6} "
        f"{'logit':>6} {'other':>6} {'total':>6}  {'step s':>8} {'tokens/s':>10} {'MFU':>6}  limiting resource"
    )
    lines = [head, "-" * len(head)]
    for i, d in enumerate(result["layouts"], 1):
        m = d["memory_bytes"]
        state = m["parameters"] + m["gradients"] + m["optimizer"]
        other = m["runtime"] + m["collectives"]
        fits = "" if d["fits"] else "!"
        lines.append(
            f"{i:>2}  {layout_name(d):<18} {mesh_text(d):<42} {d['micro_batch']:>2} {d['checkpointing']:<9} "
            f"{state / GIB:>6.1f} {m['gathered'] / GIB:>6.1f} {m['activations'] / GIB:>6.1f} {m['logits'] / GIB:>6.1f} "
            f"{other / GIB:>6.1f} {m['total'] / GIB:>5.1f}{fits:1}  {d['step_time_s']:>8.3f} "
            f"{d['tokens_per_second']:>10.0f} {100 * d['mfu']:>5.1f}%  {d['limiting_resource']}"
        )
    return lines


def print_report(result: dict, args) -> None:
    model = result["model"]
    print(
        f"vtrn plan: {model['name']} ({model['params'] / 1e9:.2f}B parameters"
        + (f", {model['active_params'] / 1e9:.2f}B active" if model["experts"] else "")
        + f") on {result['cluster']}; sequence {result['seq']}, global batch {result['global_batch']}, "
        f"{result['precision']}, AdamW, {result['schedule']}"
    )
    if result["layouts"]:
        budget = result["layouts"][0]["memory_bytes"]["budget"] / GIB
        print(
            f"memory per rank in GiB (budget {budget:.1f}; state = parameters + gradients + optimizer; "
            f"other = runtime + collective buffers; ! = over budget)"
        )
        print("\n".join(table_lines(result)))
    what = "layout evaluated" if args.layout else "layouts evaluated"
    print(
        f"\n{result['evaluated']} {what} ({result['factorizations']} mesh factorizations) in "
        f"{result['search_seconds']:.2f} s"
    )
    if result["why_nothing"]:
        print(f"\nNothing fits: {result['why_nothing']}")
        return
    best = result["layouts"][0]
    print("\nRecommended:" if not args.layout else "\nThis layout:")
    print(best["reason"])
    if result.get("alternatives"):
        print("\nThe alternatives:")
        for line in result["alternatives"]:
            print(f"  - {line}")
    print("\n" + best["code"])


def picture(result: dict, path: str) -> None:
    """Two stacked-bar panels for the top layouts: memory per rank by part, step time by part."""
    from vtrn import draw

    layouts = result["layouts"][:8]
    if not layouts:
        raise ValueError("--out: nothing to draw, no layout was evaluated")
    bar_w, gap, left, top, panel_h = 70, 30, 70, 70, 300
    width = left + len(layouts) * (bar_w + gap) + 200
    height = top + 2 * panel_h + 140
    c = draw.Canvas(width, height)
    c.text(
        20, 30, f"vtrn plan: {result['model']['name']} on {result['cluster']}", size=16, bold=True
    )

    def panel(y0, title, parts, values, limit, unit):
        c.text(left, y0 - 12, title, size=13, bold=True)
        c.line(
            left - 5,
            y0 + panel_h,
            left + len(layouts) * (bar_w + gap),
            y0 + panel_h,
            stroke="#333333",
            width=1,
        )
        for i, vals in enumerate(values):
            x = left + i * (bar_w + gap)
            y = y0 + panel_h
            for colour, v in zip(COLOURS, vals):
                h = panel_h * v / limit if limit else 0
                if h >= 1:
                    c.rect(x, y - h, bar_w, h, fill=colour, stroke=colour, width=1)
                y -= h
            c.text(
                x + bar_w / 2, y0 + panel_h + 16, layout_name(layouts[i]), size=10, anchor="middle"
            )
            c.text(x + bar_w / 2, y - 4, f"{sum(vals):.3g}", size=10, anchor="middle")
        for j, name in enumerate(parts):
            lx = left + len(layouts) * (bar_w + gap) + 10
            c.rect(lx, y0 + 10 + 18 * j, 12, 12, fill=COLOURS[j], stroke=COLOURS[j])
            c.text(lx + 18, y0 + 21 + 18 * j, name, size=11)
        c.text(left - 10, y0 + 10, f"{limit:.3g} {unit}", size=10, anchor="end")

    mem = [[d["memory_bytes"][p] / GIB for p in MEMORY_PARTS] for d in layouts]
    budget = layouts[0]["memory_bytes"]["budget"] / GIB
    mem_limit = max([budget] + [sum(v) for v in mem])
    panel(top, "memory per rank (GiB)", MEMORY_PARTS, mem, mem_limit, "GiB")
    by = top + panel_h * (1 - budget / mem_limit)
    c.line(
        left - 5, by, left + len(layouts) * (bar_w + gap), by, stroke="#d62728", width=2, dash=True
    )
    times = [[d["time_s"][p] for p in TIME_PARTS] for d in layouts]
    panel(
        top + panel_h + 70, "step time (s)", TIME_PARTS, times, max(sum(v) for v in times) or 1, "s"
    )
    draw.save(c, path)


def cmd_plan(args) -> int:
    if args.nodes < 1:
        raise ValueError(f"--nodes {args.nodes}: the cluster needs at least one node")
    if args.top < 1:
        raise ValueError(f"--top {args.top}: show at least one layout")
    if args.out and not args.out.lower().endswith((".svg", ".png")):
        raise ValueError(
            f"--out {args.out!r}: the picture is written as SVG or PNG; name the file FILE.svg or FILE.png"
        )
    plan = load_plan()
    checkpointing = [args.checkpointing] if args.checkpointing else ["none", "selective", "full"]
    micro = [args.micro_batch] if args.micro_batch else [1, 2, 4, 8]
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
        checkpointing=checkpointing,
        micro_batches=micro,
        allow_pp=not args.no_pp,
        search_placement=not args.no_placement_search,
    )
    if args.layout and result["layouts"] and not result["layouts"][0]["batch_ok"]:
        raise ValueError(result["layouts"][0]["batch_error"])
    if args.layout and result["layouts"] and not result["layouts"][0]["tp_ok"]:
        raise ValueError(result["layouts"][0]["tp_error"])
    if (
        args.layout is None
        and not result["layouts"]
        and result.get("rejected")
        and not result["rejected"][0]["batch_ok"]
    ):
        raise ValueError(result["why_nothing"])
    if args.out:
        shown = result["layouts"] or result.get("rejected", [])
        picture(dict(result, layouts=shown), args.out)
    if args.json:
        out = [
            {k: d[k] for k in JSON_FIELDS}
            | {
                "placement": d.get("placement"),
                "reason": d["reason"],
                "code": d["code"],
                "time_s": d["time_s"],
            }
            for d in result["layouts"]
        ]
        json.dump(out, sys.stdout, indent=2)
        print()
        if result["why_nothing"]:
            print(f"vtrn plan: nothing fits: {result['why_nothing']}", file=sys.stderr)
    else:
        print_report(result, args)
        if args.out:
            print(f"wrote {args.out}")
    return EXIT_NOTHING_FITS if result["why_nothing"] else EXIT_OK


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
        default=0,
        help="fix the micro-batch (default: search 1, 2, 4, 8)",
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
    p.set_defaults(func=cmd_plan)
