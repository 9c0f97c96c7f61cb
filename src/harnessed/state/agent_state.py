"""AgentState: what one agent is working with in one session.

The working ``history`` may be compacted; the features' structured data (the task list, plan
mode, the task contract, permissions, any capability's data) lives in *sections*
(:mod:`harnessed.state.sections`): JSON data by name, read and written through typed
:class:`~harnessed.state.sections.StateSection` keys, shown to the model as transient blocks and
never summarized away. ``version`` is the storage version used by stores to detect a concurrent
writer; ``task_revision`` and ``history_revision`` count changes to the sections (what
``TASK_STATE`` shows) and to the history so request preparation can tell whether something
changed underneath it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harnessed.messages import Msg
from harnessed.runtime import SessionRef
from harnessed.state.sections import StateSection

__all__ = ["AgentState"]

T = TypeVar("T")

_LEGACY_SECTIONS = ("todos", "plan", "task", "permissions")
"""Top-level fields of state files written before typed sections: each is read into the
section of the same name (its feature's ``StateSection`` decodes it)."""
_LEGACY_PARKED = ("permissions", "pending", "parked_step")
"""Where a step waiting for approval was kept before it had its own section: the ``pending``
entry of ``permissions`` moves to the ``parked_step`` section."""


@dataclass(slots=True, weakref_slot=True)
class AgentState:
    """The working state of one (agent, user, session)."""

    agent_id: str
    user_id: str
    session_id: str
    history: list[Msg] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    """Durable per-session data of the features (section name → JSON-compatible data); read and
    write it through :meth:`get` / :meth:`put` with a typed key, or :meth:`set_section`."""
    version: int = 0
    """Storage version: 0 for a state never saved; stores bump it on every successful save."""
    task_revision: int = 0
    """Bumped on every change to a section (what ``TASK_STATE`` shows)."""
    history_revision: int = 0
    """Bumped on every change to ``history``."""
    log_seq: int = 0
    """The session log position (record ``seq``) the stored state was last saved at."""
    _decoded: dict[str, tuple[Any, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Decoded typed sections: name → (the JSON data it was decoded from, the value)."""

    @property
    def key(self) -> SessionRef:
        return SessionRef(self.agent_id, self.user_id, self.session_id)

    @classmethod
    def new(cls, key: SessionRef) -> AgentState:
        return cls(key.agent_id, key.user_id, key.session_id)

    # -------------------------------------------------------------- changes
    def append(self, *messages: Msg) -> None:
        """Append messages to the working history."""
        self.history.extend(messages)
        self.history_revision += 1

    def replace_history(self, messages: list[Msg]) -> None:
        """Replace the whole working history (compaction, eviction)."""
        self.history = list(messages)
        self.history_revision += 1

    def get(self, section: StateSection[T]) -> T:
        """The value of a typed section (its default when the state has none). Decoded once
        and kept until the section is written again: treat it as read-only."""
        raw = self.sections.get(section.name)
        hit = self._decoded.get(section.name)
        if hit is not None and hit[0] is raw:
            value: T = hit[1]
            return value
        value = section.default() if raw is None else section.decode(raw)
        self._decoded[section.name] = (raw, value)
        return value

    def put(self, section: StateSection[T], value: T) -> None:
        """Replace a typed section's value: it is stored as ``section.encode(value)``, and the
        next :meth:`get` reads it back from there (so the state never shares ``value``)."""
        self.set_section(section.name, section.encode(value))

    def set_section(self, name: str, data: Any) -> None:
        """Replace a capability's section (``None`` removes it); ``data`` must be JSON data."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"state section name must be a non-empty string, got {name!r}")
        if data is None:
            self.sections.pop(name, None)
        else:
            try:
                data = json.loads(json.dumps(data))
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"state section {name!r} must be JSON-serializable: {exc}"
                ) from None
            self.sections[name] = data
        self.task_revision += 1

    def copy(self) -> AgentState:
        """An independent copy (messages are immutable and shared)."""
        return AgentState(
            agent_id=self.agent_id,
            user_id=self.user_id,
            session_id=self.session_id,
            history=list(self.history),
            metadata=copy.deepcopy(self.metadata),
            sections=copy.deepcopy(self.sections),
            version=self.version,
            task_revision=self.task_revision,
            history_revision=self.history_revision,
            log_seq=self.log_seq,
        )

    # -------------------------------------------------------- serialization
    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "version": self.version,
            "task_revision": self.task_revision,
            "history_revision": self.history_revision,
            "log_seq": self.log_seq,
            "history": [m.to_dict() for m in self.history],
            "metadata": copy.deepcopy(self.metadata),
            "sections": copy.deepcopy(self.sections),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentState:
        try:
            return cls(
                agent_id=data["agent_id"],
                user_id=data["user_id"],
                session_id=data["session_id"],
                history=[Msg.from_dict(m) for m in data.get("history", [])],
                metadata=dict(data.get("metadata") or {}),
                sections=_sections(data),
                version=int(data.get("version", 0)),
                task_revision=int(data.get("task_revision", 0)),
                history_revision=int(data.get("history_revision", 0)),
                log_seq=int(data.get("log_seq", 0)),
            )
        except KeyError as exc:
            raise ValueError(f"agent state data is missing field {exc.args[0]!r}") from None


def _sections(data: Mapping[str, Any]) -> dict[str, Any]:
    """The sections of stored state ``data``, with the fields of the format before typed
    sections moved into them (a section already present wins)."""
    raw = data.get("sections") or {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"agent state sections must be a JSON object, got {type(raw).__name__}")
    sections = copy.deepcopy(dict(raw))
    for name in _LEGACY_SECTIONS:
        value = data.get(name)
        if _present(value) and name not in sections:
            sections[name] = copy.deepcopy(value)
    owner, key, name = _LEGACY_PARKED
    old = sections.get(owner)
    if isinstance(old, Mapping) and key in old:
        rest = {k: v for k, v in old.items() if k != key}
        if old[key] and name not in sections:
            sections[name] = old[key]
        if rest:
            sections[owner] = rest
        else:
            del sections[owner]
    return sections


def _present(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(v not in (None, False, [], {}, "") for v in value.values())
    return bool(value)
