"""``grove-extender``: one sub-module per subcommand, each exposing ``register(subparsers)``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from . import (
    bench,
    certs,
    initc,
    plan,
    reconcile,
    record,
    serve,
    snapshot,
)

Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

# An explicit list, not import-time discovery: what the CLI offers is readable here.
COMMANDS: tuple[Registrar, ...] = (
    snapshot.register,
    serve.register,
    reconcile.register,
    record.register,
    bench.register,
    plan.register,
    certs.register,
    initc.register,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grove-extender",
        description="All-or-nothing, topology-aware placement of Grove PodGangs for kube-scheduler.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
