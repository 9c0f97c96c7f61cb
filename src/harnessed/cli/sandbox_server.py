"""``harnessed sandbox-server``: serve the sandbox runtime API (run it inside a container)."""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from rich.console import Console

__all__ = ["register", "serve"]

TOKEN_ENV = "HARNESSED_SANDBOX_TOKEN"


def register(sub: Any) -> None:
    server = sub.add_parser(
        "sandbox-server",
        help="serve the sandbox runtime API (execute, upload, download, list, exists)",
    )
    server.add_argument("--root", default="/workspace-sessions", help="sessions' directories")
    server.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    server.add_argument("--port", type=int, default=8900, help="port (default: 8900; 0: any)")
    server.add_argument(
        "--backend",
        choices=("host", "bubblewrap"),
        default="host",
        help="run commands directly in the container (default) or in bubblewrap inside it",
    )
    server.set_defaults(handler=serve)


def serve(args: argparse.Namespace, console: Console) -> int:
    token = os.environ.get(TOKEN_ENV, "")
    if len(token) < 16:
        console.print(
            f"set {TOKEN_ENV} to a secret of at least 16 characters",
            style="red",
            markup=False,
            highlight=False,
        )
        return 2
    try:
        import uvicorn

        from harnessed.sandbox.bubblewrap import BubblewrapSandbox
        from harnessed.sandbox.server import create_app
    except ImportError as exc:
        console.print(
            f"{exc}: pip install 'harnessed[serve]'", style="red", markup=False, highlight=False
        )
        return 2
    backend = None
    if args.backend == "bubblewrap":
        backend = BubblewrapSandbox(state_dir=args.root)
        reason = backend.unavailable_reason()
        if reason is not None:
            console.print(
                f"bubblewrap is not usable here: {reason}",
                style="red",
                markup=False,
                highlight=False,
            )
            return 2
    app = create_app(args.root, token, backend)
    # bind here, so --port 0 works and the address really bound is announced
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        console.print(
            f"cannot listen on {args.host}:{args.port}: {exc}",
            style="red",
            markup=False,
            highlight=False,
        )
        return 2
    host, port = sock.getsockname()[:2]
    print(f"harnessed sandbox-server listening on http://{host}:{port}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="info"))
    server.run(sockets=[sock])
    return 0
