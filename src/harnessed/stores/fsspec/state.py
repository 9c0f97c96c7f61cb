"""``FilesystemStateStore``: agent states on a workspace filesystem (memory, S3, any fsspec).

The layout is :class:`~harnessed.state.JsonFileStateStore`'s
(``.harnessed/state/<agent>/<user>/<session>.json``), written through the workspace's
:class:`~harnessed.workspace.Filesystem`, so a state on an object store survives the process.
States are small (the history lives in the session log), and are written only when the
structured parts change.

The version check is serialized within a process. Object stores offer no lock shared between
processes: two processes saving the same session at the same moment could both pass the check
(the last write wins). Keep each session's calls on one process, as for the session log.
"""

from __future__ import annotations

import json
from typing import Any

from harnessed.messages import clean_text
from harnessed.runtime import SessionLocks, SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.state.store import (
    StateConflictError,
    StateCorruptedError,
    decode_state,
    parse_state_file,
    snapshot,
)
from harnessed.workspace.filesystem import Filesystem
from harnessed.workspace.paths import encode_part, join

__all__ = ["FilesystemStateStore"]


class FilesystemStateStore:
    """Agent states as JSON files on any workspace filesystem."""

    def __init__(self, fs: Filesystem, root: str = ".harnessed/state") -> None:
        self.fs = fs
        self.root = fs.normalize(root)
        self._locks = SessionLocks()

    def __repr__(self) -> str:
        return f"FilesystemStateStore({self.fs!r}, {self.root!r})"

    def path_for(self, key: SessionRef) -> str:
        return join(
            self.root,
            encode_part(key.agent_id, "agent id"),
            encode_part(key.user_id, "user id"),
            encode_part(key.session_id, "session id") + ".json",
        )

    async def load(self, key: SessionRef) -> AgentState | None:
        path = self.path_for(key)
        data = await self._read(path)
        return None if data is None else decode_state(data, key, path)

    async def save(self, state: AgentState) -> None:
        key = state.key
        path = self.path_for(key)
        new_version = state.version + 1
        text = clean_text(json.dumps(snapshot(state, new_version), ensure_ascii=False))
        async with self._locks.hold(key.agent_id, key.user_id, key.session_id):
            current = await self._read(path)
            stored = 0 if current is None else current.get("version")
            if not isinstance(stored, int) or isinstance(stored, bool):
                raise StateCorruptedError(f"agent state file {path} has bad version {stored!r}")
            if stored != state.version:
                raise StateConflictError(key, state.version, stored)
            await self.fs.write_text(path, text)
        state.version = new_version

    async def delete(self, key: SessionRef) -> bool:
        path = self.path_for(key)
        async with self._locks.hold(key.agent_id, key.user_id, key.session_id):
            if not await self.fs.exists(path):
                return False
            await self.fs.delete(path)
            return True

    async def list_sessions(self, agent_id: str, user_id: str) -> list[str]:
        from urllib.parse import unquote

        folder = join(self.root, encode_part(agent_id, "agent id"), encode_part(user_id, "user id"))
        if not await self.fs.exists(folder):
            return []
        names = [i.name for i in await self.fs.ls(folder) if not i.is_dir]
        return sorted(unquote(n[: -len(".json")]) for n in names if n.endswith(".json"))

    async def _read(self, path: str) -> dict[str, Any] | None:
        if not await self.fs.exists(path):
            return None
        return parse_state_file(await self.fs.read(path), path)
