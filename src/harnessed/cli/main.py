"""The ``harnessed`` command line: one module per command, each adding its own subparser.

A command module has ``register(subparsers)``, which adds its parser and sets ``handler`` (a
function of the parsed arguments and a rich ``Console`` that returns the exit code). Adding a
command is adding its module to :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from rich.console import Console
from rich.logging import RichHandler

from harnessed.cli import (
    chat,
    db,
    demo,
    inspect,
    mcp,
    run,
    sandbox_server,
    serve,
    sessions,
    skills,
    worker,
)

__all__ = ["COMMANDS", "main"]

COMMANDS: tuple[Callable[[Any], None], ...] = (
    run.register,
    inspect.register,
    sessions.register,
    skills.register,
    mcp.register,
    db.register,
    demo.register,
    serve.register,
    chat.register,
    sandbox_server.register,
    worker.register,
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


def _log_handler(console: Console) -> logging.Handler | None:
    """Warnings of the ``harnessed.*`` loggers, printed through the console (above spinners
    and streamed text rather than through them); none if the application set up logging."""
    if logging.getLogger().handlers or logging.getLogger("harnessed").handlers:
        return None
    handler = RichHandler(console=console, show_time=False, show_path=False, markup=False)
    handler.setLevel(logging.WARNING)
    logging.getLogger("harnessed").addHandler(handler)
    return handler


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler: Callable[[argparse.Namespace, Console], int] = args.handler
    console = Console()
    logs = _log_handler(console)
    try:
        return handler(args, console)
    finally:
        if logs is not None:
            logging.getLogger("harnessed").removeHandler(logs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
