"""``harnessed inspect``: what did the model see? A per-request budget breakdown of a session.

Reads the ``context/build`` records of a session log and shows, for the most recent requests,
how the estimated input splits into system instructions, state blocks, references, history and
tool schemas against the input limit — as a table with one bar per request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from harnessed.context.manifest import ContextManifest
from harnessed.session.record import RecordType, SessionKey, SessionRecord
from harnessed.session.store import SessionLogStore

__all__ = ["PARTS", "budget_bar", "inspect_session", "manifests_of"]

PARTS: tuple[tuple[str, str, str], ...] = (
    ("system", "system", "magenta"),
    ("state", "state", "yellow"),
    ("references", "refs", "cyan"),
    ("history", "history", "green"),
    ("tools", "tools", "blue"),
)
_BAR_WIDTH = 20


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
    used_cells = 0
    for key, _label, style in PARTS:
        tokens = manifest.breakdown.get(key, 0)
        cells = max(round(width * tokens / limit), 1 if tokens > 0 else 0)
        cells = min(cells, width - used_cells)
        bar.append("█" * cells, style=style)
        used_cells += cells
    bar.append("░" * max(width - used_cells, 0), style="dim")
    return bar


async def inspect_session(
    store: SessionLogStore,
    key: SessionKey,
    console: Console,
    *,
    last: int = 10,
    as_json: bool = False,
) -> int:
    """Print the breakdown of the session's last ``last`` requests; returns an exit code."""
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
    table = Table(
        title=f"{key.agent_id} · {key.user_id} · {key.session_id} — last {len(pairs)} request(s)",
        title_justify="left",
    )
    table.add_column("seq", justify="right", style="dim", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for _key, label, style in PARTS:
        table.add_column(label, justify="right", style=style, no_wrap=True)
    table.add_column("used/limit", justify="right", no_wrap=True)
    table.add_column("budget", no_wrap=True)
    notes: list[str] = []
    for record, manifest in pairs:
        status = manifest.validation
        status_text = Text(
            "ok" if status == "passed" else status, style="green" if status == "passed" else "red"
        )
        if manifest.purpose != "reasoning":
            status_text.append(f" ({manifest.purpose})", style="dim")
        counted = manifest.input_limit >= 0
        used = f"{manifest.estimated_input_tokens:,}/{manifest.input_limit:,}" if counted else "—"
        table.add_row(
            str(record.seq),
            status_text,
            *(f"{manifest.breakdown.get(k, 0):,}" if counted else "—" for k, _, _ in PARTS),
            used,
            budget_bar(manifest),
        )
        if manifest.transforms:
            notes.append(f"  seq {record.seq}: {', '.join(manifest.transforms)}")
    console.print(table)
    if notes:
        console.print("[bold]transforms[/]")
        for note in notes:
            console.print(escape(note), style="dim")
    latest = pairs[-1][1]
    console.print(
        f"[dim]latest: {len(latest.items)} material(s), {latest.history_messages} history "
        f"message(s), counted with {escape(latest.counting_method)}"
        f"{' (exact)' if latest.exact else ' (estimate)'}[/]"
    )
    return 0
