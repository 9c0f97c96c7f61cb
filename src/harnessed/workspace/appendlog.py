"""``AppendLog``: append-only text (such as a JSONL session log) on any filesystem.

Where the filesystem appends in place (local disk, memory) the log is the single file at
``path``. On object stores an append would rewrite the whole object, so each append becomes a
new segment object under ``<path>.segments/`` instead, named so that sorting the names gives
the order of the appends (a nanosecond timestamp, then a random suffix so two writers never
collide). Reading concatenates the file, if any, and then the segments.
"""

from __future__ import annotations

import secrets
import time

from harnessed.workspace.filesystem import Filesystem

__all__ = ["AppendLog"]

SEGMENTS_SUFFIX = ".segments"


class AppendLog:
    """Append-only text at ``path`` of ``fs``; ``segmented`` defaults to what ``fs`` needs."""

    def __init__(self, fs: Filesystem, path: str, *, segmented: bool | None = None) -> None:
        self.fs = fs
        self.path = fs.normalize(path)
        if not self.path:
            raise ValueError("an AppendLog needs a file path, not the workspace root")
        self.segmented = (not fs.appends_in_place) if segmented is None else segmented
        self.segments_dir = self.path + SEGMENTS_SUFFIX
        self._last_ns = 0

    def __repr__(self) -> str:
        return f"AppendLog({self.path!r}, segmented={self.segmented})"

    async def append(self, text: str) -> str | None:
        """Add ``text`` at the end of the log (nothing is written for an empty string).

        Returns the path written: the segment object when segmented, else the log file
        (``None`` when there was nothing to write).
        """
        if not text:
            return None
        if not self.segmented:
            await self.fs.append_text(self.path, text)
            return self.path
        stamp = max(time.time_ns(), self._last_ns + 1)
        self._last_ns = stamp
        segment = f"{self.segments_dir}/{stamp:020d}-{secrets.token_hex(4)}.part"
        await self.fs.write_text(segment, text)
        return segment

    async def read_text(self) -> str:
        """The whole log, in append order (``""`` when nothing was written yet)."""
        parts: list[str] = []
        if await self.fs.exists(self.path):
            parts.append(await self.fs.read_text(self.path))
        for segment in await self.segments():
            parts.append(await self.fs.read_text(segment))
        return "".join(parts)

    async def segments(self) -> list[str]:
        """Paths of the segment objects, oldest first."""
        if not await self.fs.exists(self.segments_dir):
            return []
        found = await self.fs.glob("*.part", self.segments_dir)
        return [info.path for info in found]

    async def exists(self) -> bool:
        return await self.fs.exists(self.path) or bool(await self.segments())
