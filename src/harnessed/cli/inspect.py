"""``harnessed inspect``: what did the model see? A per-request budget breakdown of a session.

Reads the ``context/build`` records of a session log and shows, for the most recent requests,
how the estimated input splits into system instructions, state blocks, references, history and
tool schemas against the input limit — as a table with one bar per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from harnessed.cli.config import DATA_DIR_HELP, WORKSPACE_HELP, ConfigError, data_location
from harnessed.cli.recording import last_request_path
from harnessed.cli.render import cache_note
from harnessed.context.manifest import ContextManifest
from harnessed.context.meter import Meter
from harnessed.cost.ledger import session_spending
from harnessed.log.record import RecordType, SessionRecord
from harnessed.log.store import SessionLogStore
from harnessed.messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from harnessed.models.base import USAGE_KEY, ToolSchema, Usage
from harnessed.runtime import SessionRef
from harnessed.stores.local.jsonl import JsonlSessionLogStore
from harnessed.tokens import default_estimator
from harnessed.workspace.layout import Workspace

__all__ = [
    "PARTS",
    "budget_bar",
    "inspect_command",
    "inspect_session",
    "manifests_of",
    "register",
    "show_last_request",
]

PARTS: tuple[tuple[str, str, str], ...] = (
    ("system", "system", "magenta"),
    ("state", "state", "yellow"),
    ("references", "refs", "cyan"),
    ("history", "history", "green"),
    ("tools", "tools", "blue"),
)
_BAR_WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉"


def manifests_of(records: Sequence[SessionRecord]) -> list[tuple[SessionRecord, ContextManifest]]:
    """The manifests stored in ``context/build`` records, oldest first."""
    out = []
    for record in records:
        data = record.payload.get("context_manifest")
        if record.type == RecordType.CONTEXT_BUILD and isinstance(data, dict):
            out.append((record, ContextManifest.from_dict(data)))
    return out


def budget_bar(manifest: ContextManifest, width: int = _BAR_WIDTH) -> Text:
    """One coloured bar: each part's share of the input limit, the rest left empty."""
    bar = Text()
    limit = manifest.input_limit
    if limit <= 0:
        return Text("not counted", style="dim")
    # Eighths of a cell, so every part is drawn at its share: a part too small for an eighth
    # is not drawn at all (its number is shown beside the bar) rather than inflated.
    eighths = width * 8
    used = 0
    for key, _label, style in PARTS:
        tokens = manifest.breakdown.get(key, 0)
        part = min(round(eighths * tokens / limit), eighths - used)
        if part <= 0:
            continue
        full, rest = divmod(part, 8)
        bar.append("█" * full + (_EIGHTHS[rest] if rest else ""), style=style)
        used += part
    cells_used = len(bar.plain)
    bar.append("░" * max(width - cells_used, 0), style="dim")
    return bar


def register(sub: Any) -> None:
    inspect = sub.add_parser(
        "inspect", help="show what the model saw: per-request budget breakdown of a session"
    )
    inspect.add_argument("--workspace", default=None, help=WORKSPACE_HELP)
    inspect.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    inspect.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    inspect.add_argument("--user", default="default", help="user id (default: default)")
    inspect.add_argument(
        "--session", default=None, help="session id (default: the most recent one)"
    )
    inspect.add_argument("--last", type=int, default=10, help="how many requests (default: 10)")
    inspect.add_argument("--json", action="store_true", help="print the manifests as JSON")
    inspect.add_argument(
        "--show",
        action="store_true",
        help="print the last request exactly as the model received it (kept by harnessed run)",
    )
    inspect.set_defaults(handler=inspect_command)


def inspect_command(args: argparse.Namespace, console: Console) -> int:
    root = Path(args.workspace or ".")
    if not root.is_dir():
        console.print(f"[red]no workspace at {escape(str(root))}[/]")
        return 2
    if args.last < 1:
        console.print("[red]--last must be at least 1[/]")
        return 2
    try:
        data = data_location(args.workspace, args.data_dir)
    except ConfigError as exc:
        console.print(str(exc), style="red", markup=False)
        return 2
    workspace = Workspace(root, data_dir=data)
    assert workspace.data_root is not None  # a local directory
    store = JsonlSessionLogStore(workspace.data_root / Workspace.AGENTS_DIR)
    return asyncio.run(_inspect(store, workspace, args, console))


async def _inspect(
    store: JsonlSessionLogStore, workspace: Workspace, args: argparse.Namespace, console: Console
) -> int:
    session = args.session
    if session is None:
        known = await store.sessions(args.agent, args.user)
        session = known[0].session_id if known else args.agent
    key = SessionRef(args.agent, args.user, session)
    if args.show:
        return await show_last_request(workspace, key, console)
    return await inspect_session(store, key, console, last=args.last, as_json=args.json)


async def show_last_request(workspace: Workspace, key: SessionRef, console: Console) -> int:
    """Print the session's last reasoning request: every message in full, then the tools."""
    path = last_request_path(workspace, key.agent_id, key.user_id, key.session_id)
    try:
        data = json.loads(await workspace.fs.read_text(path))
    except FileNotFoundError:
        console.print(
            f"[yellow]no request kept for session {escape(key.session_id)!r}[/] (requests are "
            "kept by harnessed run; run the session with it first)"
        )
        return 1
    messages = [Msg.from_dict(m) for m in data.get("messages", [])]
    console.rule(
        f"[bold]{escape(key.session_id)}[/] · last request to {escape(str(data.get('model')))} "
        f"· {len(messages)} message(s), {len(data.get('tools', []))} tool(s)",
        style="dim",
    )
    for number, message in enumerate(messages, 1):
        who = f"{message.role} {message.name}" if message.name else message.role
        console.print(f"[bold cyan]── {number} {escape(who)}[/]", highlight=False)
        console.print(_message_text(message), markup=False, highlight=False, soft_wrap=True)
    if data.get("tools"):
        costs = [_schema_tokens(schema) for schema in data["tools"]]
        console.print(
            f"[bold cyan]── tools[/] ({len(costs)}, about {sum(costs):,} tokens of schemas)",
            highlight=False,
        )
        for schema, cost in zip(data["tools"], costs, strict=True):
            console.print(
                f"{schema['name']} (~{cost} tokens): "
                f"{json.dumps(schema['parameters'], ensure_ascii=False)}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    return 0


def _schema_tokens(schema: dict[str, Any]) -> int:
    """What one tool's schema costs in a request, counted as the context compiler counts."""
    found = ToolSchema(
        str(schema.get("name")), str(schema.get("description") or ""), schema["parameters"]
    )
    return Meter(default_estimator()).tools([found])


def _message_text(message: Msg) -> str:
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock | ThinkingBlock):
            parts.append(
                block.text if isinstance(block, TextBlock) else f"(thinking) {block.thinking}"
            )
        elif isinstance(block, ToolUseBlock):
            parts.append(f"→ {block.name}({json.dumps(dict(block.input), ensure_ascii=False)})")
        elif isinstance(block, ToolResultBlock):
            parts.append(f"← {block.name or block.tool_use_id}: {block.content}")
        else:
            parts.append(f"[{type(block).__name__}]")
    return "\n".join(parts)


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 10_000 else f"{tokens:,}"


async def inspect_session(
    store: SessionLogStore,
    key: SessionRef,
    console: Console,
    *,
    last: int = 10,
    as_json: bool = False,
) -> int:
    """Print the breakdown of the session's last ``last`` requests; returns an exit code.

    Two lines per request, readable in 80 columns: status, tokens used of the limit and a bar
    whose parts are drawn at their true share; then each part's tokens.
    """
    records = await store.tail(key, last, types=[RecordType.CONTEXT_BUILD])
    pairs = manifests_of(records)
    if as_json:
        console.print_json(json.dumps([m.to_dict() for _, m in pairs]))
        return 0
    if not pairs:
        console.print(
            f"[yellow]no requests recorded for agent {escape(key.agent_id)!r}, user "
            f"{escape(key.user_id)!r}, session {escape(key.session_id)!r}[/]"
        )
        return 1
    width = max(10, min(40, console.width - 40))
    _print_header(console, key, len(pairs))
    reported = await _reported_usage(store, key, pairs[0][0].seq)
    notes: list[str] = []
    for record, manifest in pairs:
        usage = reported.get(str(record.payload.get("model_call_id")))
        row, parts = _request_lines(record.seq, manifest, width, usage)
        console.print(row, no_wrap=True, overflow="ignore")
        console.print(parts)
        if manifest.transforms:
            notes.append(f"  seq {record.seq}: {', '.join(manifest.transforms)}")
    if notes:
        console.print("[bold]transforms[/]")
        for note in notes:
            console.print(escape(note), style="dim", highlight=False)
    _print_latest(console, pairs[-1][1])
    await _print_spending(store, key, console)
    return 0


def _print_header(console: Console, key: SessionRef, requests: int) -> None:
    """The session's name, the legend of the bar's parts and the column titles."""
    console.print(
        f"[bold]{escape(key.agent_id)} · {escape(key.user_id)} · {escape(key.session_id)}[/] — "
        f"last {requests} request(s)",
        highlight=False,
    )
    legend = Text("parts: ", style="dim")
    for _key, label, style in PARTS:
        legend.append(f"█ {label}  ", style=style)
    console.print(legend)
    console.print(Text("  seq status          used/limit     %  budget", style="bold"))


async def _reported_usage(store: SessionLogStore, key: SessionRef, after: int) -> dict[str, Usage]:
    """The usage providers reported for the answers logged after ``after``, by model call."""
    found: dict[str, Usage] = {}
    for record in await store.read(key, after_seq=after, types=[RecordType.MESSAGE]):
        message = record.message
        if message is None or message.role != "assistant":
            continue
        usage = Usage.from_dict(message.metadata.get(USAGE_KEY))
        call_id = message.metadata.get("model_call_id")
        if usage is not None and isinstance(call_id, str):
            found[call_id] = usage
    return found


def _request_lines(
    seq: int, manifest: ContextManifest, width: int, usage: Usage | None = None
) -> tuple[Text, Text]:
    """A request's two lines: status, tokens used of the limit and the bar; each part's
    tokens, the estimated cacheable prefix and the cache reads and writes the provider
    reported."""
    status = manifest.validation
    row = Text(f"{seq:>5} ", style="dim")
    label: str = "ok" if status == "passed" else status
    if manifest.purpose != "reasoning":
        label = f"{label} {manifest.purpose}"
    row.append(f"{label:<8} ", style="green" if status == "passed" else "red")
    counted = manifest.input_limit > 0
    used = f"{manifest.estimated_input_tokens:,}/{manifest.input_limit:,}" if counted else "—"
    share = (
        f"{100 * manifest.estimated_input_tokens / manifest.input_limit:.0f}%" if counted else ""
    )
    row.append(f"{used:>17} {share:>4}  ").append_text(budget_bar(manifest, width))
    parts = Text(" " * 15)
    for key_, label_, style in PARTS:
        tokens = manifest.breakdown.get(key_, 0) if counted else 0
        parts.append(f"{label_} ", style="dim").append(_k(tokens), style=style).append(" ")
    if counted and manifest.purpose == "reasoning":
        parts.append("cached ", style="dim").append(_k(manifest.cached_prefix_tokens))
    if usage is not None and (usage.cache_read_tokens or usage.cache_write_tokens):
        parts.append("\n" + " " * 15 + "provider's cache: ", style="dim")
        parts.append(f"read {_k(usage.cache_read_tokens)}, wrote {_k(usage.cache_write_tokens)}")
    return row, parts


def _print_latest(console: Console, latest: ContextManifest) -> None:
    """The latest request's tool schemas, materials, history and how it was counted."""
    window = (
        f"window {latest.context_window:,} ({latest.window_source})"
        if latest.context_window
        else f"window unknown ({latest.window_source})"
    )
    console.print(
        f"[dim]latest: tool schemas {latest.breakdown.get('tools', 0):,} tokens, "
        f"{len(latest.items)} material(s), {latest.history_messages} history "
        f"message(s), counted with {escape(latest.counting_method)}"
        f"{' (exact)' if latest.exact else ' (estimate)'}; {escape(window)}[/]"
    )


async def _print_spending(store: SessionLogStore, key: SessionRef, console: Console) -> None:
    """What the session's model requests spent, if it made any."""
    spent = await session_spending(store, key)
    if spent.requests:
        cached = cache_note(spent.cache_read_tokens, spent.cache_write_tokens, " ({})")
        console.print(
            f"[dim]spent: {spent.requests} model request(s), {spent.input_tokens:,} in{cached} "
            f"/ {spent.output_tokens:,} out tokens, {escape(spent.describe_cost())}[/]",
            highlight=False,
        )
