"""The ``vtrn`` command line: ``main(argv) -> int`` is its one entry point.

Each subcommand is a module of this package, named in ``COMMANDS``. A module defines
``register(subparsers)``, which adds its parser and sets ``run`` as its ``handler`` default, and
``run(args) -> int``, which returns the exit status. Registration must stay cheap: no torch
import at module level, so ``vtrn topo`` and ``vtrn mesh`` answer in well under a second.

Exit status: what the subcommand returns; 2 for bad input, with one line on stderr and no
traceback (argparse's convention): a ``ValueError`` from the subcommand or the model prints
``vtrn CMD: error: MESSAGE``, a ``CommandError`` prints ``vtrn CMD: MESSAGE``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand modules of this package, in the order `vtrn --help` lists them.
COMMANDS = ("topo", "mesh", "hlo", "plan", "run", "estimate", "trace", "ops")


class CommandError(Exception):
    """Bad input, with a message already in the subcommand's words; exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse's errors in one line (``vtrn run: error: ...``), exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vtrn",
        description="vtrn: a software Trainium for PyTorch. Topology, meshes and collectives of "
        "trn1/trn2/trn3 instances.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs ``vtrn ARGV`` (default: the process's arguments) and returns its exit status."""
    from vtrn._native import NativeModuleMissing

    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        prog = f"vtrn {args.command}" if getattr(args, "command", None) else "vtrn"
        print(f"{prog}: error: unrecognized arguments: {' '.join(unknown)}", file=sys.stderr)
        return 2
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except CommandError as err:
        print(f"vtrn {args.command}: {err}", file=sys.stderr)
        return 2
    except ValueError as err:  # bad input: the model's and the subcommand's messages
        print(f"vtrn {args.command}: error: {err}", file=sys.stderr)
        return 2
    except NativeModuleMissing as err:
        print(f"vtrn: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `vtrn mesh ... | head`
        return 0
