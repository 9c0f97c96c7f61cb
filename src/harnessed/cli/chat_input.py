"""The line editor of ``harnessed chat`` (prompt_toolkit): editing with the arrow keys, history
kept across runs, multi-line input and paste, completion of slash commands.

Enter sends; Alt-Enter (or Esc then Enter) starts a new line; a paste keeps its newlines.
Ctrl-C clears a line being typed, and on an empty line is handed to the chat (it interrupts
the running turn, or asks before leaving); Ctrl-D on an empty line leaves. The prompt stays
at the bottom while a turn runs, so what is typed meanwhile stays visible and is sent when
Enter is pressed (as the next message, or as ``/steer``).
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["LineBuffered", "SlashCompleter", "make_prompt", "read_lines"]


class SlashCompleter(Completer):
    """Completes ``/commands`` at the start of the line, with their one-line help."""

    def __init__(self, commands: Mapping[str, str]) -> None:
        self.commands = dict(commands)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        typed = document.text_before_cursor
        if not typed.startswith("/") or " " in typed or "\n" in typed:
            return
        for name, meta in self.commands.items():
            if name.startswith(typed):
                yield Completion(name, start_position=-len(typed), display_meta=meta)


class _AnswersSkipped(FileHistory):
    """The history file, without the answers to questions (``y`` to "Allow …?")."""

    def __init__(self, path: Path, answering: Callable[[], bool]) -> None:
        super().__init__(str(path))
        self._answering = answering

    def append_string(self, string: str) -> None:
        if self._answering():
            return
        super().append_string(string)


def _history(path: Path | None, answering: Callable[[], bool]) -> History:
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600, exist_ok=True)
    except OSError:  # a read-only home: history for this run only
        return InMemoryHistory()
    return _AnswersSkipped(path, answering)


def make_prompt(
    commands: Mapping[str, str],
    history_path: Path | None,
    toolbar: Callable[[], str | None],
    answering: Callable[[], bool] = lambda: False,
) -> PromptSession[str]:
    """The chat's prompt session; ``toolbar`` is what the agent is doing (``None``: nothing),
    ``answering`` whether the line typed now answers a question (kept out of the history)."""
    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _ctrl_c(event: KeyPressEvent) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    def bottom() -> FormattedText | None:
        status = toolbar()
        return None if status is None else FormattedText([("", f" {status}")])

    return PromptSession(
        history=_history(history_path, answering),
        completer=SlashCompleter(commands),
        complete_while_typing=True,
        key_bindings=keys,
        bottom_toolbar=bottom,
        prompt_continuation=lambda width, line, wrap: "… ".rjust(width),
        enable_history_search=False,
    )


async def read_lines(
    prompt: PromptSession[str],
    message: Callable[[], str],
    lines: asyncio.Queue[str | None],
    on_ctrl_c: Callable[[], bool],
) -> None:
    """Read lines into ``lines`` until the end of input (then ``None``). ``on_ctrl_c`` is
    called for Ctrl-C on an empty line; when it returns ``True`` the chat is left."""
    while True:
        try:
            line = await prompt.prompt_async(message)
        except KeyboardInterrupt:
            if on_ctrl_c():
                lines.put_nowait(None)
                return
            continue
        except EOFError:
            lines.put_nowait(None)
            return
        lines.put_nowait(line)


class LineBuffered(io.TextIOBase):
    """Passes only whole lines to ``target``: text streamed a few characters at a time is
    shown above the prompt line by line instead of being redrawn over by it."""

    def __init__(self, target: Callable[[], TextIO]) -> None:
        self._target = target
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            done, self._pending = self._pending.rsplit("\n", 1)
            out = self._target()
            out.write(done + "\n")
            out.flush()
        return len(text)

    def flush(self) -> None:
        pass  # partial lines wait for their newline

    def isatty(self) -> bool:
        return self._target().isatty()

    def fileno(self) -> int:
        return self._target().fileno()
