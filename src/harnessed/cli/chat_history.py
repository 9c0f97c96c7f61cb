"""What was said in a session, printed when ``harnessed chat`` opens it again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from harnessed.messages import Msg

__all__ = ["YOU", "print_history"]

YOU = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "
"""What marks the user's lines: the prompt, and the user's messages in a printed history."""

SHOWN = 30
"""The last messages shown; older ones are counted."""


def print_history(console: Console, messages: Sequence[Msg], limit: int = SHOWN) -> None:
    """The user's messages, the replies and the tools called, oldest first."""
    said = [m for m in messages if m.role in ("user", "assistant")]
    if not said:
        return
    shown = said[-limit:]
    older = len(said) - len(shown)
    head = f"earlier in this session ({len(said)} messages"
    head += f", the last {len(shown)} shown)" if older else ")"
    console.rule(head, style="dim")
    for message in shown:
        text = message.text.strip()
        if message.role == "user":
            if text:
                console.print(YOU + text, style="bold", markup=False, highlight=False)
            continue
        if text:
            console.print(text, markup=False, highlight=False)
        for use in message.tool_uses:
            args = json.dumps(dict(use.input), ensure_ascii=False)
            if len(args) > 100:
                args = args[:100] + "…"
            console.print(f"⚙ {use.name} {args}", style="dim", markup=False, highlight=False)
    console.rule(style="dim")
