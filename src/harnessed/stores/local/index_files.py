"""What the on-disk search indexes share: where a user's index lives, a pool of open
per-user handles, and rebuilding from the session log."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from harnessed.log.record import SessionRecord
from harnessed.log.search import indexable
from harnessed.log.store import SessionLogStore
from harnessed.runtime import SessionRef
from harnessed.workspace.paths import session_dir_parts

__all__ = ["Handle", "HandlePool", "rebuild_from_log", "user_session_file"]

T = TypeVar("T")


@functools.lru_cache(maxsize=4_096)  # every append asks: encoding the ids is not free
def user_session_file(root: Path, agent_id: str, user_id: str, name: str) -> Path:
    """``<root>/<agent>/sessions/<user>/<name>``: a file among one user's session logs."""
    return root.joinpath(*session_dir_parts(agent_id, user_id), name)


class Handle(Protocol):
    """One open index: a lock that serializes its use, and a way to close it."""

    lock: threading.Lock
    closed: bool

    def close(self) -> None: ...


H = TypeVar("H", bound=Handle)


class HandlePool(Generic[H]):
    """Open handles by path; beyond ``max_open`` the least recently used are closed."""

    def __init__(self, factory: Callable[[Path], H], max_open: int) -> None:
        self._factory = factory
        self.max_open = max_open
        self._handles: OrderedDict[Path, H] = OrderedDict()
        self._lock = threading.Lock()

    def _open(self, path: Path) -> H:
        with self._lock:
            handle = self._handles.get(path)
            if handle is not None and not handle.closed:
                self._handles.move_to_end(path)
                return handle
            handle = self._factory(path)
            self._handles[path] = handle
            victims = []
            while len(self._handles) > self.max_open:
                victims.append(self._handles.popitem(last=False)[1])
        for victim in victims:
            victim.close()
        return handle

    def use(self, path: Path, work: Callable[[H], T]) -> T:
        """Run ``work`` on the handle of ``path`` under its lock (blocking; call in a thread)."""
        while True:
            handle = self._open(path)
            with handle.lock:
                if handle.closed:  # closed by eviction between open and lock: open again
                    continue
                return work(handle)

    def discard(self, path: Path) -> None:
        """Close and forget the handle of ``path`` (if open)."""
        with self._lock:
            handle = self._handles.pop(path, None)
        if handle is not None:
            handle.close()

    def close_all(self) -> None:
        with self._lock:
            handles = list(self._handles.values())
            self._handles.clear()
        for handle in handles:
            handle.close()


async def rebuild_from_log(
    add: Callable[[SessionRef, Sequence[SessionRecord]], Awaitable[int]],
    store: SessionLogStore,
    agent_id: str,
    user_id: str,
    chunk: int,
) -> int:
    """Feed every session of the user to ``add`` in chunks; returns the records indexed."""
    total = 0
    for info in await store.sessions(agent_id, user_id):
        key = SessionRef(agent_id, user_id, info.session_id)
        records = await store.read(key)
        total += sum(1 for r in records if indexable(r) is not None)
        for start in range(0, len(records), chunk):
            await add(key, records[start : start + chunk])
    return total
