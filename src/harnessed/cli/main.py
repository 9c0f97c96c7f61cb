"""The ``harnessed`` command line: one module per command, each adding its own subparser.

A command module has ``register(subparsers)``, which adds its parser and sets ``handler`` (a
function of the parsed arguments and a rich ``Console`` that returns the exit code). Adding a
command is adding its module to :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from rich.console import Console

from harnessed.cli import demo, inspect, run, sessions, skills

__all__ = ["COMMANDS", "main"]

COMMANDS: tuple[Callable[[Any], None], ...] = (
    run.register,
    inspect.register,
    sessions.register,
    skills.register,
    demo.register,
)


def _version() -> str:
    try:
        return version("harnessed")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harnessed", description="A harness for long-running LLM agents."
    )
    parser.add_argument("--version", action="version", version=f"harnessed {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler: Callable[[argparse.Namespace, Console], int] = args.handler
    return handler(args, Console())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
