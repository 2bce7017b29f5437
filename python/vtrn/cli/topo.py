"""``vtrn topo``: each node's chip grid with the ranks of every chip, and its links."""

from __future__ import annotations

import argparse

from vtrn.cli._args import add_cluster_args, make_cluster
from vtrn.render.canvas import check_picture_path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "topo",
        help="print the chip grid with each chip's ranks, and draw it",
        description="Prints each node's chip grid with the ranks of every chip.",
    )
    add_cluster_args(parser)
    parser.add_argument(
        "--out", metavar="FILE.svg|FILE.png", help="also draw the grid into an SVG or PNG file"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from vtrn.render.topology import topo_lines

    check_picture_path(args.out)
    cluster = make_cluster(args)
    print("\n".join(topo_lines(cluster)))
    if args.out:
        from vtrn.render.canvas import save
        from vtrn.render.topology_pictures import topo_picture

        save(topo_picture(cluster), args.out)
        print(f"\nwrote {args.out}")
    return 0
