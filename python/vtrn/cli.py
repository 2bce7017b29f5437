"""The ``vtrn`` command line.

Each subcommand lives in its own module, listed in ``COMMAND_MODULES``. A module defines
``register(subparsers)``, which adds its subparsers and sets ``func`` (called with the parsed
arguments, returning the exit status) as a default. Adding a subcommand (``ops``, ``plan``,
``run``) means writing its module and adding its name here. Registration must stay cheap: no
torch import at module level, so ``vtrn topo`` and ``vtrn mesh`` answer in well under a second.

Exit status: what the subcommand returns; 2 for bad input (argparse's convention, also used
for ValueError raised by the model, whose message says what was wrong and what to do).
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "vtrn.topology",  # topo, mesh
    "vtrn.hlo_cli",  # hlo
    "vtrn.plan_cli",  # plan
    "vtrn.launch",  # run
    "vtrn.ops_cli",  # ops
)


class UsageError(ValueError):
    """Bad input detected by a subcommand; the message is shown and the exit status is 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vtrn",
        description="vtrn: a software Trainium for PyTorch. Topology, meshes and collectives of "
        "trn1/trn2/trn3 instances.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ValueError as err:  # bad input: the model's and the subcommand's messages
        print(f"vtrn {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `vtrn mesh ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
