"""``vtrn trace``: a picture of a modeled device timeline.

    vtrn trace trace.json --png timeline.png
    vtrn trace trace.json --out timeline.svg

TRACE is a Chrome trace with neuron device events: ``torch.profiler`` with
``ProfilerActivity.PrivateUse1`` (``export_chrome_trace``) or ``vtrn estimate --trace``. One row
per device stream (collectives on rows of their own), each piece of work coloured by the engine
class that bounds it: Tensor, Vector, Scalar, GpSimd, DMA or collective.
"""

from __future__ import annotations

import argparse
import json
import os

from vtrn.cli._files import read_regular_file
from vtrn.render import canvas, timeline

MAX_TRACE_BYTES = 1 << 30


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "trace",
        help="a picture of a modeled device timeline (a Chrome trace with neuron events)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("trace", metavar="TRACE", help="Chrome trace JSON")
    p.add_argument("--png", "--out", dest="out", required=True, help="FILE.png or FILE.svg")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    canvas.check_picture_path(args.out)
    text = read_regular_file(args.trace, "trace", MAX_TRACE_BYTES)
    try:
        trace = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ValueError(f"{args.trace}: not JSON ({err})") from None
    picture = timeline.draw(trace, os.path.basename(args.trace))
    canvas.save(picture, args.out)
    print(f"wrote {args.out}")
    return 0
