"""Which stores an agent uses: the one ``store=`` setting, or the defaults of its workspace.

* ``store="postgresql://..."`` (or a :class:`SharedStore` such as
  :class:`~harnessed.stores.postgres.PostgresStore`): session log, search index and state in the
  shared database — the deployment where many app servers serve the same sessions;
* a local workspace: JSONL logs, an SQLite index and JSON state files in it;
* a remote workspace (``s3://``, ``memory://``, any fsspec URL): logs and state in the
  workspace storage (never only in process memory);
* no workspace: process memory.

A store given one by one (``state_store=`` ...) wins over the default of its kind; together with
``store=`` it is an error (which one would hold the session?).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from harnessed.log.search import SearchIndex
from harnessed.log.store import SessionLogStore
from harnessed.state.store import AgentStateStore
from harnessed.stores.local.indexed import IndexedSessionLogStore
from harnessed.stores.log_defaults import indexed_session_store
from harnessed.stores.state_defaults import default_state_store
from harnessed.workspace.layout import Workspace

if TYPE_CHECKING:
    from harnessed.turns.gate import TurnGate

__all__ = ["AgentStores", "SharedStore", "agent_stores", "open_store"]


@runtime_checkable
class SharedStore(Protocol):
    """Everything a session needs, in one place many app servers share."""

    def session_log(self) -> SessionLogStore:
        """The session log store."""
        ...

    def search_index(self) -> SearchIndex:
        """The search index over that log."""
        ...

    def state_store(self) -> AgentStateStore:
        """The agent state store."""
        ...

    def turn_gate(self) -> TurnGate:
        """The turn gate: one turn per session at a time across every server."""
        ...

    async def close(self) -> None:
        """Release the connections of the running event loop."""
        ...


def open_store(store: str | SharedStore) -> SharedStore:
    """The shared store a ``store=`` setting names (a URL is opened here)."""
    if isinstance(store, str):
        from harnessed.stores.postgres import PostgresStore, is_postgres_url

        if not is_postgres_url(store):
            raise ValueError(
                f"store must be a postgresql:// URL or a store object, got {store[:40]!r}"
            )
        return PostgresStore(store)
    if not isinstance(store, SharedStore):
        raise TypeError(
            "store must be a postgresql:// URL or an object with session_log(), "
            f"search_index(), state_store(), turn_gate() and close(), got {type(store).__name__}"
        )
    return store


@dataclass(slots=True)
class AgentStores:
    """The stores one agent uses (see the module notes)."""

    state: AgentStateStore
    sessions: IndexedSessionLogStore
    shared: SharedStore | None = None
    owns_shared: bool = False
    """The agent opened the shared store from a URL, so it closes it."""
    gate: TurnGate | None = None
    """The shared store's turn gate (``None``: the agent's default gate)."""

    async def close(self) -> None:
        await self.sessions.close()
        if self.shared is not None and self.owns_shared:
            await self.shared.close()


def agent_stores(
    workspace: Workspace | None,
    store: str | SharedStore | None = None,
    state_store: AgentStateStore | None = None,
    session_store: SessionLogStore | None = None,
    search_index: SearchIndex | None = None,
) -> AgentStores:
    """The stores of an agent built with these settings."""
    if store is None:
        return AgentStores(
            state_store or default_state_store(workspace),
            indexed_session_store(workspace, session_store, search_index),
        )
    given = [
        name
        for name, value in (
            ("state_store", state_store),
            ("session_store", session_store),
            ("search_index", search_index),
        )
        if value is not None
    ]
    if given:
        raise ValueError(f"give store= or {', '.join(given)}=, not both")
    shared = open_store(store)
    return AgentStores(
        shared.state_store(),
        IndexedSessionLogStore(shared.session_log(), shared.search_index()),
        shared,
        owns_shared=isinstance(store, str),
        gate=shared.turn_gate(),
    )
