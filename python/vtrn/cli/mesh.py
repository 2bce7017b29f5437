"""``vtrn mesh``: the groups of a DeviceMesh, whether the runtime can route them, and what
their collectives cost; ``--placement auto`` searches for a placement that routes, ``--code``
prints the Python that builds the mesh.

Exit status: 0 when every group is routable, 3 when some group is not (the runtime's error is
printed), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from vtrn.cli._args import (
    add_cluster_args,
    load_placement_file,
    make_cluster,
    parse_ints,
    parse_names,
    parse_sizes,
)
from vtrn.render.canvas import check_picture_path

EXIT_UNROUTABLE = 3


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "mesh",
        help="groups of a DeviceMesh, whether the runtime can route them, and their cost",
        description="Prints each axis's groups, whether the collective library can route them, and the "
        "algorithm and modeled time at a few message sizes. Exit status 0: every group "
        "routable; 3: some group is not; 2: bad input.",
    )
    parser.add_argument("--shape", required=True, help="mesh shape, e.g. 16,4")
    parser.add_argument(
        "--names",
        required=True,
        help="axis names, e.g. shard,tp (pp, replicate, shard, tp, dp, fsdp)",
    )
    add_cluster_args(parser)
    parser.add_argument(
        "--placement",
        default="default",
        metavar="default|auto|FILE.json",
        help="row-major (default), searched (auto), or a rank matrix from a JSON file",
    )
    parser.add_argument(
        "--sizes",
        help="message sizes to model, 1 B to 1 TiB each, e.g. 64KiB,16MiB,256MiB (the default)",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument(
        "--code",
        action="store_true",
        help="print Python that builds this mesh with dist.new_group and DeviceMesh.from_group",
    )
    parser.add_argument(
        "--out", metavar="FILE.svg|FILE.png", help="draw one group per axis on the torus"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from vtrn.render.topology import mesh_json, mesh_lines

    check_picture_path(args.out)
    cluster = make_cluster(args)
    shape = parse_ints(args.shape, "--shape")
    names = parse_names(args.names)
    sizes = parse_sizes(args.sizes)
    placement = args.placement
    if placement not in ("default", "auto"):
        placement = load_placement_file(placement, shape)
    report = cluster.report_mesh(shape, names, placement, sizes)
    if args.code:
        if report.ok:
            from vtrn.render.mesh_code import mesh_code

            print(mesh_code(report), end="")
        else:
            print("\n".join(mesh_lines(report)), file=sys.stderr)
    elif args.json:
        json.dump(mesh_json(report), sys.stdout)
        print()
    else:
        print("\n".join(mesh_lines(report)))
    if args.out:
        from vtrn.render.canvas import save
        from vtrn.render.topology_pictures import mesh_picture

        save(mesh_picture(report), args.out)
        if not args.json and not args.code:
            print(f"\nwrote {args.out}")
    return 0 if report.ok else EXIT_UNROUTABLE
