"""``grove-extender``: one sub-module per subcommand, each exposing ``register(subparsers)``.

The product's own subcommands are listed below. Subcommands that live outside the product are registered as entry
points in the ``grove_extender.commands`` group: ``bench`` (``benchmarks.cli``) is one, so an install without the
``benchmarks`` package (the runtime image) simply has no ``bench``, and the product never imports it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points

Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

# An explicit list, not import-time discovery: what the product's CLI offers is readable here. Each module is
# imported only when its command runs (or for the whole help): ``initc`` starts in every pod with a startup order
# and must not pay for OR-Tools, FastAPI and the reconciler, which the other commands import.
COMMANDS: dict[str, str] = {
    "snapshot": "scheduler.cli.snapshot",
    "serve": "scheduler.cli.serve",
    "reconcile": "scheduler.cli.reconcile",
    "record": "scheduler.cli.record",
    "plan": "scheduler.cli.plan",
    "certs": "scheduler.cli.certs",
    "initc": "scheduler.cli.initc",
}

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


def _registrar(module: str) -> Registrar:
    register: Registrar = importlib.import_module(module).register
    return register


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser: with ``command`` one of the product's own, only that subcommand is registered (and only
    its module imported); otherwise every subcommand, entry points included."""
    parser = argparse.ArgumentParser(
        prog="grove-extender",
        description="All-or-nothing, topology-aware placement of Grove PodGangs for kube-scheduler.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    if command in COMMANDS:
        registrars = [_registrar(COMMANDS[command])]
    else:
        registrars = [*map(_registrar, COMMANDS.values()), *registered_commands()]
    for register in registrars:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
