"""Typed state sections: how a feature keeps its durable, per-session data in :class:`AgentState`.

:class:`AgentState` has no field of any feature. A feature declares a :class:`StateSection` —
a name, how its value is read from JSON data and written back, and the value of a session that
never set it — and reads and writes it through the state::

    TODOS = StateSection("todos", decode=read_todos, encode=write_todos, default=tuple)

    items = state.get(TODOS)      # decoded once, then cached until the section changes
    state.put(TODOS, new_items)   # stored as JSON data in state.sections["todos"]

The stored form is the JSON data in ``AgentState.sections[name]``, so a state file written by
one version of a feature is read by the next through its ``decode``. Values must be treated
as read-only (use immutable values: frozen dataclasses, tuples): :meth:`AgentState.get`
returns the same object until the section is written again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["StateSection"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StateSection(Generic[T]):
    """The key of one typed section of :class:`~harnessed.state.AgentState`."""

    name: str
    """Where the section is stored: ``AgentState.sections[name]``."""
    decode: Callable[[Any], T]
    """JSON data as stored → the value (raise ``ValueError`` naming the problem)."""
    encode: Callable[[T], Any]
    """The value → JSON-compatible data; ``None`` removes the section (e.g. for the default
    value, so that a session that never used the feature stores nothing)."""
    default: Callable[[], T]
    """The value of a session whose state has no such section."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"StateSection name must be a non-empty string, got {self.name!r}")

    def __repr__(self) -> str:
        return f"StateSection({self.name!r})"
