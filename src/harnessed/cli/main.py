"""The ``harnessed`` command line: one module per command, each adding its own subparser.

A command module has ``register(subparsers)``, which adds its parser and sets ``handler`` (a
function of the parsed arguments and a rich ``Console`` that returns the exit code). Adding a
command is adding its name, module and one-line help to :data:`COMMANDS`.

Start-up is kept short: only the module of the command being run is imported (``--help`` and
``--version`` import none, nor rich), and Ctrl-C at any moment ends the program with exit code
130 and no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

    from rich.console import Console

__all__ = ["COMMANDS", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run an agent on a task and stream its work"),
    "chat": ("chat", "talk with an agent in the terminal (one session)"),
    "demo": ("demo", "a scripted agent fixes a bug with real tools (no API key)"),
    "serve": ("serve", "serve agents over HTTP (JSON + server-sent events) with a web chat page"),
    "inspect": ("inspect", "show what the model saw: per-request budget breakdown of a session"),
    "sessions": ("sessions", "list a user's sessions, most recent first"),
    "reindex": (
        "sessions",
        "rebuild the search index of an agent's session logs from the JSONL files",
    ),
    "search": ("sessions", "search the messages of a user's sessions"),
    "skills": ("skills", "list the skills an agent sees, or validate skills"),
    "mcp": ("mcp", "look at MCP servers"),
    "db": ("db", "create or migrate the PostgreSQL schema of a shared store"),
    "sandbox-server": (
        "sandbox_server",
        "serve the sandbox runtime API (execute, upload, download, list, exists)",
    ),
    "worker": ("worker", "run agents' turns from a Temporal task queue"),
}
"""Command name: the module under ``harnessed.cli`` that registers it, and its help line."""


def _version() -> str:
    from harnessed import __version__  # the package is imported already; its metadata is slow

    return __version__


class _Version(argparse.Action):
    """``--version``, looking the version up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"harnessed {_version()}")
        parser.exit()


def _parser(command: str | None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported, the others are listed by name."""
    parser = argparse.ArgumentParser(
        prog="harnessed", description="A harness for long-running LLM agents."
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    loaded = COMMANDS[command][0] if command in COMMANDS else None
    for name, (module, help_line) in COMMANDS.items():
        if module != loaded:
            sub.add_parser(name, help=help_line)
        elif name == command:
            importlib.import_module(f"harnessed.cli.{module}").register(sub)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg
        if arg in ("-h", "--help", "--version"):
            return None
    return None


def _log_handler(console: Console) -> logging.Handler | None:
    """Warnings of the ``harnessed.*`` loggers, printed through the console (above spinners
    and streamed text rather than through them); none if the application set up logging."""
    import logging

    from rich.logging import RichHandler

    if logging.getLogger().handlers or logging.getLogger("harnessed").handlers:
        return None
    handler = RichHandler(console=console, show_time=False, show_path=False, markup=False)
    handler.setLevel(logging.WARNING)
    logging.getLogger("harnessed").addHandler(handler)
    return handler


def _main(argv: list[str]) -> int:
    args = _parser(_command(argv)).parse_args(argv)
    if not hasattr(args, "handler"):  # a command listed but not loaded: should not happen
        _parser(args.command).parse_args(argv)
    import logging

    from rich.console import Console

    console = Console()
    logs = _log_handler(console)
    try:
        code: int = args.handler(args, console)
        return code
    finally:
        if logs is not None:
            logging.getLogger("harnessed").removeHandler(logs)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        # Ctrl-C while starting or outside a command's own handling: leave quietly
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("\ninterrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
