"""Where one scope's memory lives, and the daily ledger files in it.

For a scope (set by the workspace's isolation scope) the memory home holds ``MEMORY.md`` and
``memory/``: ``memory/YYYY-MM-DD.md`` are the append-only daily ledgers, ``memory/archive/``
the ledgers retired by maintenance, and ``memory/.state.json`` the consolidation watermark and
the time of the last maintenance. The workspace root ``MEMORY.md`` is shared by every scope.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from harnessed.workspace.filesystem import Filesystem
from harnessed.workspace.layout import Workspace
from harnessed.workspace.paths import join

__all__ = ["Ledger", "MemoryPlace", "MemoryState", "Watermark"]

logger = logging.getLogger(__name__)

ARCHIVE_DIR = "archive"
STATE_FILE = ".state.json"
_LEDGER_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")


@dataclass(frozen=True, slots=True)
class MemoryPlace:
    """The memory files of one scope (workspace-relative paths)."""

    memory_file: str
    """The scope's curated ``MEMORY.md``."""
    ledger_dir: str
    """The scope's ``memory/`` directory."""
    shared_file: str = Workspace.MEMORY_MD
    """The workspace root ``MEMORY.md`` (the same file as ``memory_file`` when global)."""

    @classmethod
    def of(cls, workspace: Workspace, agent_id: str, user_id: str, session_id: str) -> MemoryPlace:
        ids = {"agent_id": agent_id, "user_id": user_id, "session_id": session_id}
        return cls(workspace.memory_file(**ids), workspace.runtime_dir("memory", **ids))

    @property
    def home(self) -> str:
        return posixpath.dirname(self.memory_file)

    @property
    def archive_dir(self) -> str:
        return join(self.ledger_dir, ARCHIVE_DIR)

    @property
    def state_file(self) -> str:
        return join(self.ledger_dir, STATE_FILE)

    def ledger(self, day: date) -> str:
        return join(self.ledger_dir, f"{day.isoformat()}.md")

    def curated_files(self) -> list[str]:
        """``MEMORY.md`` files this scope reads: the scope's own, then the shared one."""
        return list(dict.fromkeys((self.memory_file, self.shared_file)))

    def owns(self, path: str) -> bool:
        """Whether ``path`` (normalized) is one of this scope's memory files."""
        if path in self.curated_files():
            return True
        inside = path.startswith(self.ledger_dir + "/") if self.ledger_dir else True
        return inside and path.endswith(".md")


def ledger_day(path: str) -> date | None:
    """The date of a ledger file name (``None`` for other files)."""
    found = _LEDGER_NAME.match(posixpath.basename(path))
    if found is None:
        return None
    try:
        return date(int(found[1]), int(found[2]), int(found[3]))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Watermark:
    """Ledger text up to ``offset`` characters of the ledger named ``ledger`` (and every
    earlier ledger) is already in ``MEMORY.md``."""

    ledger: str = ""
    offset: int = 0


@dataclass(frozen=True, slots=True)
class MemoryState:
    watermark: Watermark = field(default_factory=Watermark)
    maintained_at: float = 0.0

    def to_json(self) -> str:
        data = {
            "watermark": {"ledger": self.watermark.ledger, "offset": self.watermark.offset},
            "maintained_at": self.maintained_at,
        }
        return json.dumps(data, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> MemoryState:
        data: dict[str, Any] = json.loads(text)
        mark = data.get("watermark") or {}
        return cls(
            Watermark(str(mark.get("ledger", "")), int(mark.get("offset", 0))),
            float(data.get("maintained_at", 0.0)),
        )


class Ledger:
    """Reading and writing one scope's memory files."""

    def __init__(self, fs: Filesystem, place: MemoryPlace) -> None:
        self.fs = fs
        self.place = place

    async def read(self, path: str) -> str:
        return await self.fs.read_text(path) if await self.fs.exists(path) else ""

    async def append(self, day: date, heading: str, facts: Sequence[str]) -> str:
        """Append ``facts`` as bullets under ``heading`` to the day's ledger; returns its path."""
        path = self.place.ledger(day)
        existing = await self.read(path)
        parts = [] if existing else [f"# Memory ledger {day.isoformat()}\n"]
        if existing and not existing.endswith("\n"):
            parts.append("\n")
        parts.append(f"\n## {heading}\n")
        parts.extend(f"- {fact}\n" for fact in facts)
        await self.fs.append_text(path, "".join(parts))
        return path

    async def ledgers(self, *, archived: bool = False) -> list[tuple[date, str]]:
        """Ledger files (dated names) of the scope, oldest first."""
        folder = self.place.archive_dir if archived else self.place.ledger_dir
        if not await self.fs.exists(folder):
            return []
        found = []
        for info in await self.fs.ls(folder):
            day = None if info.is_dir else ledger_day(info.path)
            if day is not None:
                found.append((day, info.path))
        return sorted(found)

    async def archive_before(self, cutoff: date) -> list[str]:
        """Move ledgers dated before ``cutoff`` to ``memory/archive/``; returns moved paths."""
        moved = []
        for day, path in await self.ledgers():
            if day >= cutoff:
                continue
            target = join(self.place.archive_dir, posixpath.basename(path))
            await self.fs.write_text(target, await self.fs.read_text(path))
            await self.fs.delete(path)  # a crash before this leaves a copy; the next run retries
            moved.append(path)
        return moved

    async def state(self) -> MemoryState:
        text = await self.read(self.place.state_file)
        if not text.strip():
            return MemoryState()
        try:
            return MemoryState.from_json(text)
        except (ValueError, TypeError, AttributeError):
            logger.warning("unreadable %s; starting from an empty state", self.place.state_file)
            return MemoryState()

    async def save_state(self, state: MemoryState) -> None:
        await self.fs.write_text(self.place.state_file, state.to_json())

    async def pending(self, mark: Watermark) -> list[tuple[str, int, str]]:
        """Ledger text not yet consolidated: ``(ledger name, start offset, text)``, in order.

        Archived and current ledgers both count, so a ledger archived before it was ever
        consolidated is not lost.
        """
        files: dict[str, str] = {}
        for archived in (True, False):
            for _, path in await self.ledgers(archived=archived):
                files[posixpath.basename(path)] = path  # a current copy wins over an archived one
        out = []
        for name in sorted(files):
            if name < mark.ledger:
                continue
            text = await self.fs.read_text(files[name])
            start = mark.offset if name == mark.ledger else 0
            if len(text) > start and text[start:].strip():
                out.append((name, start, text[start:]))
        return out
