"""``grove-extender``: one sub-module per subcommand, each exposing ``register(subparsers)``.

The product's own subcommands are listed below. Subcommands that live outside the product are registered as entry
points in the ``grove_extender.commands`` group: ``bench`` (``benchmarks.cli``) is one, so an install without the
``benchmarks`` package (the runtime image) simply has no ``bench``, and the product never imports it.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points

from . import (
    certs,
    initc,
    plan,
    reconcile,
    record,
    serve,
    snapshot,
)

Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

# An explicit list, not import-time discovery: what the product's CLI offers is readable here.
COMMANDS: tuple[Registrar, ...] = (
    snapshot.register,
    serve.register,
    reconcile.register,
    record.register,
    plan.register,
    certs.register,
    initc.register,
)

ENTRY_POINT_GROUP = "grove_extender.commands"


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported here. The entry points come with the distribution's metadata, but the
    runtime image installs the distribution without the ``benchmarks`` package their modules live in."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def registered_commands() -> list[Registrar]:
    """The subcommands other installed packages register, by entry-point name."""
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda entry: entry.name)
    return [entry.load() for entry in found if _installed(entry.module)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grove-extender",
        description="All-or-nothing, topology-aware placement of Grove PodGangs for kube-scheduler.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for register in (*COMMANDS, *registered_commands()):
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
