"""Stores that keep :class:`AgentState` between calls and between processes.

Every store uses optimistic concurrency. A state carries the storage ``version`` it was loaded
with; ``save`` only succeeds when the stored version still equals it (0 meaning "nothing stored
yet"), and then both the stored copy and the caller's object move to ``version + 1``. A writer
holding an outdated copy gets :class:`StateConflictError` instead of silently replacing newer
data; it should load again, reapply its change and retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import fcntl
import json
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import unquote

from harnessed._internal.durability import fsync_directory
from harnessed.messages import clean_text
from harnessed.runtime import SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.workspace.atomic import write_atomically
from harnessed.workspace.paths import encode_part

__all__ = [
    "AgentStateStore",
    "InMemoryStateStore",
    "JsonFileStateStore",
    "StateConflictError",
    "StateCorruptedError",
]


class StateConflictError(RuntimeError):
    """Raised by ``save`` when the stored version is not the one the state was loaded with."""

    def __init__(self, key: SessionRef, expected: int, stored: int) -> None:
        self.key = key
        self.expected = expected
        self.stored = stored
        super().__init__(
            f"state conflict for {_describe(key)}: the state was loaded at version {expected} "
            f"but the stored version is {stored}; load it again and retry"
        )

    def __reduce__(self) -> tuple[type[StateConflictError], tuple[SessionRef, int, int]]:
        return (type(self), (self.key, self.expected, self.stored))  # picklable across processes


class StateCorruptedError(ValueError):
    """Raised when a stored state cannot be decoded; it is never treated as missing."""


@runtime_checkable
class AgentStateStore(Protocol):
    """Where agent states live between calls. All methods are coroutines."""

    async def load(self, key: SessionRef) -> AgentState | None:
        """Return an independent copy of the stored state, or None if none was saved."""

    async def save(self, state: AgentState) -> None:
        """Store ``state`` if nobody saved since it was loaded, then bump its ``version``."""

    async def delete(self, key: SessionRef) -> bool:
        """Remove the stored state; return whether there was one."""

    async def list_sessions(self, agent_id: str, user_id: str) -> list[str]:
        """Return the sorted session ids stored for this agent and user."""


def _describe(key: SessionRef) -> str:
    return f"agent={key.agent_id!r} user={key.user_id!r} session={key.session_id!r}"


def parse_state_file(raw: bytes, where: str) -> dict[str, Any]:
    """The JSON object of a state file (never taken as missing when it is damaged)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise StateCorruptedError(f"agent state file {where} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise StateCorruptedError(f"agent state file {where} does not hold a JSON object")
    return data


def decode_state(data: Mapping[str, Any], key: SessionRef, where: str) -> AgentState:
    """The state stored as ``data`` in ``where``, checked to be the one of ``key``."""
    try:
        state = AgentState.from_dict(data)
    except (ValueError, TypeError, KeyError) as exc:
        raise StateCorruptedError(f"agent state file {where} is invalid: {exc}") from exc
    if state.key != key:
        raise StateCorruptedError(
            f"agent state file {where} holds {_describe(state.key)}, expected {_describe(key)}"
        )
    return state


def snapshot(state: AgentState, version: int) -> dict[str, Any]:
    """Serialize ``state`` as it will be stored, with the new version number."""
    data = state.to_dict()
    data["version"] = version
    return data


class InMemoryStateStore:
    """A process-local store, for tests and single-process use.

    States are kept as JSON-compatible dicts (passed through ``json`` so the store accepts
    exactly what :class:`JsonFileStateStore` accepts). A thread lock makes the version check
    and the write one atomic step.
    """

    def __init__(self) -> None:
        self._states: dict[SessionRef, dict[str, Any]] = {}
        self._lock = threading.Lock()

    async def load(self, key: SessionRef) -> AgentState | None:
        with self._lock:
            data = self._states.get(key)  # stored dicts are replaced, never mutated
        return None if data is None else AgentState.from_dict(copy.deepcopy(data))

    async def save(self, state: AgentState) -> None:
        key = state.key
        new_version = state.version + 1
        data = json.loads(json.dumps(snapshot(state, new_version)))
        with self._lock:
            current = self._states.get(key)
            stored = 0 if current is None else int(current["version"])
            if stored != state.version:
                raise StateConflictError(key, state.version, stored)
            self._states[key] = data
        state.version = new_version

    async def delete(self, key: SessionRef) -> bool:
        with self._lock:
            return self._states.pop(key, None) is not None

    async def list_sessions(self, agent_id: str, user_id: str) -> list[str]:
        with self._lock:
            keys = list(self._states)
        return sorted(k.session_id for k in keys if (k.agent_id, k.user_id) == (agent_id, user_id))


_MAX_NAME_BYTES = 200  # leaves room for '.json', '.lock' and temp suffixes under NAME_MAX
_INLINE_READ_BYTES = 64 << 10
"""State files up to this size are read on the calling thread (a few microseconds; a hand-off
to a worker thread costs ~90 µs); larger ones in a worker thread."""


class JsonFileStateStore:
    """Keeps each state as ``<root>/<agent>/<user>/<session>.json``, safe across processes.

    Ids are percent-encoded into file names (see :meth:`path_for`). Saves write a temporary
    file in the same directory, fsync it and rename it over the old one, so readers see either
    the old or the new state, never a torn one. The version check and the rename happen under
    an exclusive ``flock`` on ``<session>.json.lock``, which serializes writers in all threads
    and processes. Writes and reads of large files run in a worker thread, off the event loop;
    a missing or small state file is read where it is asked for.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path_for(self, key: SessionRef) -> Path:
        """The file that holds the state for ``key``."""
        names = [encode_part(key.agent_id), encode_part(key.user_id), encode_part(key.session_id)]
        if any(len(name) > _MAX_NAME_BYTES for name in names):
            raise ValueError(f"an id of {_describe(key)} is too long to be used as a file name")
        return self.root.joinpath(*names[:2], names[2] + ".json")

    async def load(self, key: SessionRef) -> AgentState | None:
        path = self.path_for(key)
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            return None  # the common case: nothing structured was ever saved
        except OSError:
            size = _INLINE_READ_BYTES + 1  # let the read say what is wrong
        if size <= _INLINE_READ_BYTES:
            return self._load(key)  # a small file: cheaper here than a worker hand-off
        return await asyncio.to_thread(self._load, key)

    async def save(self, state: AgentState) -> None:
        new_version = state.version + 1
        data = snapshot(state, new_version)
        await asyncio.to_thread(self._save, state.key, state.version, data)
        state.version = new_version

    async def delete(self, key: SessionRef) -> bool:
        return await asyncio.to_thread(self._delete, key)

    async def list_sessions(self, agent_id: str, user_id: str) -> list[str]:
        directory = self.root / encode_part(agent_id) / encode_part(user_id)
        return await asyncio.to_thread(self._list, directory)

    # ------------------------------------------------------------ blocking work
    def _load(self, key: SessionRef) -> AgentState | None:
        path = self.path_for(key)
        data = self._read(path)
        return None if data is None else decode_state(data, key, str(path))

    def _save(self, key: SessionRef, expected: int, data: dict[str, Any]) -> None:
        path = self.path_for(key)
        text = clean_text(json.dumps(data, ensure_ascii=False, indent=1))
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked(path):
            current = self._read(path)
            stored = 0 if current is None else current.get("version")
            if not isinstance(stored, int) or isinstance(stored, bool):
                raise StateCorruptedError(f"agent state file {path} has bad version {stored!r}")
            if stored != expected:
                raise StateConflictError(key, expected, stored)
            self._write_atomically(path, text)

    def _delete(self, key: SessionRef) -> bool:
        path = self.path_for(key)
        if not path.parent.is_dir():
            return False
        with self._locked(path, remove=True):
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            fsync_directory(path.parent)
            return True

    @staticmethod
    def _list(directory: Path) -> list[str]:
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        sessions: list[str] = []
        for name in names:
            if name.endswith(".json"):
                session = unquote(name[: -len(".json")], errors="replace")
                if session and encode_part(session) + ".json" == name:
                    sessions.append(session)  # anything else is not a file this store wrote
        return sorted(sessions)

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        return parse_state_file(raw, str(path))

    @staticmethod
    def _write_atomically(path: Path, text: str) -> None:
        write_atomically(path, text.encode("utf-8"))
        fsync_directory(path.parent)

    @staticmethod
    @contextlib.contextmanager
    def _locked(path: Path, *, remove: bool = False) -> Iterator[None]:
        """Hold an exclusive lock on the sidecar lock file of ``path``.

        A holder may unlink the lock file (``remove=True``), so after locking we check that the
        path still names the file we locked, and start over if it does not.
        """
        lock_path = path.with_name(path.name + ".lock")
        while True:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    same = os.path.samestat(os.stat(lock_path), os.fstat(fd))
                except FileNotFoundError:
                    same = False
                if same:
                    try:
                        yield
                    finally:
                        if remove:
                            with contextlib.suppress(FileNotFoundError):
                                os.unlink(lock_path)
                    return
            finally:
                os.close(fd)  # closing the descriptor releases the lock
