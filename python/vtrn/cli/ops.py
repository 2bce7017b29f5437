"""``vtrn ops [--native] [--op NAME] [--markdown]``: how each ATen op runs on ``neuron``.

Every ATen op with a CPU or a ``neuron`` kernel, one row each: native (lowered to StableHLO and
compiled, or a runtime kernel), CPU fallback, or composite (PyTorch's default kernel runs it as
other ops). ``--markdown`` prints docs/ops.md. Unlike the other subcommands this one imports torch:
the answer is the dispatcher's.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from vtrn.render.ops import REGENERATE


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "ops",
        help="which ATen ops run natively on neuron and which fall back to the CPU",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("--native", action="store_true", help="only the ops with a neuron kernel")
    p.add_argument(
        "--op",
        metavar="NAME",
        help="one op: an overload (add.out) or every overload of an op (add)",
    )
    p.add_argument(
        "--markdown", action="store_true", help=f"print the markdown document ({REGENERATE})"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from vtrn.ops import ops_table, select
    from vtrn.render.ops import markdown, text_lines

    rows = ops_table()
    if args.op:
        picked = select(rows, args.op)
        if not picked:
            close = difflib.get_close_matches(
                args.op.removeprefix("aten::"), [r.name for r in rows], n=3
            )
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ValueError(
                f"unknown op '{args.op}': no ATen op of that name has a CPU or neuron kernel.{hint} "
                "Run `vtrn ops` to list every op."
            )
        rows = picked
    if args.native:
        rows = [r for r in rows if r.status == "native"]
    if args.markdown:
        sys.stdout.write(markdown(rows))
    else:
        print("\n".join(text_lines(rows)))
    return 0
