"""``harnessed serve``: the HTTP channel and web chat page of an application's agents."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping
from typing import Any

from rich.console import Console

from harnessed.cli.loading import load_object

__all__ = ["register"]

_TOKENS_ENV = "HARNESSED_TOKENS"


def register(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve agents over HTTP (JSON + server-sent events) with a web chat page",
        description="Serve agents over HTTP. Every request needs a bearer token that maps to a "
        f"user id: --token TOKEN=USER (repeatable), ${_TOKENS_ENV}='tok1=alice,tok2=bob', or "
        "--auth module:function (token -> user id or None).",
    )
    serve.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="MODULE:OBJECT",
        help="a HarnessAgent, a Gateway, or a function returning one (repeat for more agents)",
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="serve the scripted demo agent (no API key, no network); without a token one is "
        "made up and printed",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: %(default)s)")
    serve.add_argument("--token", action="append", default=[], metavar="TOKEN=USER")
    serve.add_argument("--auth", default=None, metavar="MODULE:FUNCTION")
    serve.add_argument(
        "--max-body-bytes", type=int, default=1_000_000, help="largest request body accepted"
    )
    serve.add_argument(
        "--channels",
        default=None,
        metavar="FILE",
        help="chat channels (Slack, Feishu/Lark, signed webhook) from a TOML or JSON file; "
        "'${NAME}' values are read from the environment",
    )
    serve.add_argument(
        "--channel",
        action="append",
        default=[],
        metavar="MODULE:OBJECT",
        help="a Channel object, or a function returning one, configured in code (repeatable)",
    )
    serve.add_argument(
        "--ag-ui",
        action="store_true",
        help="also stream turns as the AG-UI protocol at POST /v1/ag-ui (the ag-ui extra)",
    )
    limits = serve.add_argument_group(
        "connection limits", "what a client may take or hold (slow or idle clients cannot pile up)"
    )
    defaults = _default_limits()
    limits.add_argument(
        "--header-timeout",
        type=float,
        default=defaults.header_timeout,
        metavar="SECONDS",
        help="time for a request head to arrive, else 408 (default: %(default)s)",
    )
    limits.add_argument(
        "--body-timeout",
        type=float,
        default=defaults.body_timeout,
        metavar="SECONDS",
        help="time for a request body to arrive after its head, else 408 (default: %(default)s)",
    )
    limits.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=defaults.keep_alive_timeout,
        metavar="SECONDS",
        help="how long an idle connection stays open (default: %(default)s)",
    )
    limits.add_argument(
        "--max-connections",
        type=int,
        default=defaults.max_connections,
        help="connections open at once; lowered to fit the open-file limit (default: %(default)s)",
    )
    limits.add_argument(
        "--max-header-bytes",
        type=int,
        default=defaults.max_header_bytes,
        help="largest request head, else 431 (default: %(default)s)",
    )
    serve.add_argument(
        "--time-slice",
        default=None,
        metavar="SECONDS|off",
        help="how long agent runs may keep the event loop busy before they let it read new "
        "requests (default 0.002; off: no checkpoints)",
    )
    serve.set_defaults(handler=_serve)


def _default_limits() -> Any:
    from harnessed.gateway.limits_server import ServerLimits

    return ServerLimits()


def server_limits(args: argparse.Namespace) -> Any:
    """The :class:`~harnessed.gateway.limits_server.ServerLimits` of the command line."""
    from harnessed.gateway.limits_server import ServerLimits

    return ServerLimits(
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        keep_alive_timeout=args.keep_alive_timeout,
        max_connections=args.max_connections,
        max_header_bytes=args.max_header_bytes,
    )


def parse_time_slice(text: str) -> float | None:
    """``--time-slice``: a positive number of seconds, or ``off`` (``None``)."""
    if text.strip().lower() == "off":
        return None
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(
            f"--time-slice must be a number of seconds (like 0.002) or off, got {text!r}"
        ) from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"--time-slice must be a positive number of seconds, got {text!r}")
    return seconds


def parse_tokens(items: list[str], env: Mapping[str, str]) -> dict[str, str]:
    """Tokens from ``TOKEN=USER`` items and the environment variable."""
    pairs = list(items)
    pairs += [p for p in env.get(_TOKENS_ENV, "").split(",") if p.strip()]
    tokens: dict[str, str] = {}
    for pair in pairs:
        token, sep, user = pair.strip().partition("=")
        if not sep or not token or not user:
            raise ValueError(f"a token must be given as TOKEN=USER, got {pair!r}")
        tokens[token] = user
    return tokens


def build_app(args: argparse.Namespace, env: Mapping[str, str]) -> Any:
    from harnessed.agent import HarnessAgent
    from harnessed.gateway import BearerAuth, Gateway, create_app

    loaded = [load_object(spec) for spec in args.agent]
    if args.demo:
        from harnessed.cli.demo_chat import demo_chat_agent

        loaded.append(demo_chat_agent())
    if not loaded:
        raise ValueError("nothing to serve: give --agent MODULE:OBJECT (or --demo)")
    if len(loaded) == 1 and isinstance(loaded[0], Gateway):
        gateway = loaded[0]
    else:
        for obj in loaded:
            if not isinstance(obj, HarnessAgent):
                raise ValueError(f"--agent must name a HarnessAgent or a Gateway, got {obj!r}")
        gateway = Gateway(loaded)
    tokens = parse_tokens(args.token, env)
    resolve = load_object(args.auth) if args.auth else None
    if not tokens and resolve is None:
        raise ValueError(
            f"no way to authenticate users: pass --token TOKEN=USER, set {_TOKENS_ENV}, or "
            "--auth module:function"
        )
    for channel in channels_of(args, env):
        gateway.add_channel(channel)
    return create_app(
        gateway,
        BearerAuth(tokens, resolve=resolve),
        max_body_bytes=args.max_body_bytes,
        ag_ui=getattr(args, "ag_ui", False),
    )


def channels_of(args: argparse.Namespace, env: Mapping[str, str]) -> list[Any]:
    """The channels of ``--channels FILE`` and ``--channel MODULE:OBJECT``."""
    from harnessed.gateway.channels import Channel
    from harnessed.gateway.channels.config import load_channels

    found: list[Any] = []
    if getattr(args, "channels", None):
        found += load_channels(args.channels, env)
    for spec in getattr(args, "channel", []):
        obj = load_object(spec)
        if not isinstance(obj, Channel):
            raise ValueError(f"--channel must name a Channel, got {obj!r}")
        found.append(obj)
    return found


def _serve(args: argparse.Namespace, console: Console) -> int:
    try:
        import uvicorn
    except ImportError:
        console.print(
            "harnessed serve needs the serve extra: pip install 'harnessed[serve]'",
            style="red",
            markup=False,
            highlight=False,
        )
        return 2
    from harnessed.gateway.server import server_config

    if args.demo and not args.token and not args.auth and not os.environ.get(_TOKENS_ENV):
        import secrets

        token = secrets.token_urlsafe(18)
        args.token = [f"{token}=demo"]
        console.print(
            f"demo token (user demo): {token}  (paste it into the page's token field)",
            markup=False,
            highlight=False,
        )
    try:
        app = build_app(args, os.environ)
        config = server_config(
            app, host=args.host, port=args.port, limits=server_limits(args), log_level="info"
        )
        if args.time_slice is not None:
            from harnessed.run.fair import set_time_slice

            set_time_slice(parse_time_slice(args.time_slice))
    except (ValueError, TypeError, ImportError, OSError) as exc:
        console.print(f"cannot serve: {exc}", style="red", markup=False, highlight=False)
        return 2
    console.print(f"serving on http://{args.host}:{args.port}/ (chat page at /, API under /v1)")
    uvicorn.Server(config).run()
    return 0
