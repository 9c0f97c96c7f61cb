"""ContextManifest: what one prepared request contained — metadata only, never text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from harnessed._internal.clock import now_iso

__all__ = ["ContextManifest", "ManifestItem", "Validation"]

Validation: TypeAlias = Literal[
    "passed",
    "budget_exceeded",
    "invalid_tool_pairs",
    "state_conflict",
    "history_conflict",
    "build_failed",
]


@dataclass(frozen=True, slots=True)
class ManifestItem:
    """One material that made it into the request."""

    source_type: str
    source_id: str
    content_hash: str
    revision: str
    placement: str
    required: bool
    priority: int
    id: str = ""
    tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source_type": self.source_type,
            "source_id": self.source_id,
            "content_hash": self.content_hash,
            "revision": self.revision,
            "placement": self.placement,
            "required": self.required,
            "priority": self.priority,
            "tokens": self.tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ManifestItem:
        return cls(
            source_type=data["source_type"],
            source_id=data["source_id"],
            content_hash=data["content_hash"],
            revision=data["revision"],
            placement=data["placement"],
            required=bool(data["required"]),
            priority=int(data["priority"]),
            id=data.get("id", ""),
            tokens=int(data.get("tokens", 0)),
        )


@dataclass(frozen=True, slots=True)
class ContextManifest:
    """The record of one request preparation.

    ``validation == "passed"`` means preparation succeeded — not that the model call did, nor
    that the model used the material. A build that failed before counting reports
    ``estimated_input_tokens == input_limit == -1`` and ``counting_method == "unavailable"``.
    ``breakdown`` splits the estimate into ``system``, ``history``, ``state``, ``references``
    and ``tools`` tokens.
    """

    call_id: str
    purpose: str
    model: str
    policy_version: str
    estimated_input_tokens: int
    input_limit: int
    counting_method: str
    exact: bool
    task_revision: int
    items: tuple[ManifestItem, ...] = ()
    transforms: tuple[str, ...] = ()
    validation: Validation = "passed"
    breakdown: Mapping[str, int] = field(default_factory=dict)
    history_messages: int = 0
    timestamp: str = field(default_factory=now_iso)
    context_window: int | None = None
    """The model's window the limit was derived from (``None``: unknown, a default applied)."""
    window_source: str = "unknown"
    """Where that window came from: ``given``, ``server``, ``server_error``,
    ``rejected_request``, ``published`` or ``unknown`` (see ``harnessed.models.windows``)."""
    delegated_usage: Mapping[str, int] = field(default_factory=dict)
    """Tokens spent on the session's behalf outside its own requests so far (sub-agents:
    ``input_tokens`` / ``output_tokens``); empty when there were none."""
    cached_prefix_tokens: int = 0
    """Estimated tokens at the start of this request (tool schemas, system message, history)
    that the previous reasoning request of the session sent the same: what a provider's prompt
    cache can serve. 0 for the first request, and after a change near the start."""

    @property
    def passed(self) -> bool:
        return self.validation == "passed"

    def item(self, material_id: str) -> ManifestItem | None:
        """The item with this material id (e.g. ``source/guide/login``), if present."""
        return next((i for i in self.items if i.id == material_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "purpose": self.purpose,
            "model": self.model,
            "policy_version": self.policy_version,
            "estimated_input_tokens": self.estimated_input_tokens,
            "input_limit": self.input_limit,
            "counting_method": self.counting_method,
            "exact": self.exact,
            "task_revision": self.task_revision,
            "items": [i.to_dict() for i in self.items],
            "transforms": list(self.transforms),
            "validation": self.validation,
            "breakdown": dict(self.breakdown),
            "history_messages": self.history_messages,
            "timestamp": self.timestamp,
            "context_window": self.context_window,
            "window_source": self.window_source,
            "delegated_usage": dict(self.delegated_usage),
            "cached_prefix_tokens": self.cached_prefix_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextManifest:
        return cls(
            call_id=data["call_id"],
            purpose=data["purpose"],
            model=data["model"],
            policy_version=data["policy_version"],
            estimated_input_tokens=int(data["estimated_input_tokens"]),
            input_limit=int(data["input_limit"]),
            counting_method=data["counting_method"],
            exact=bool(data["exact"]),
            task_revision=int(data["task_revision"]),
            items=tuple(ManifestItem.from_dict(i) for i in data.get("items", [])),
            transforms=tuple(data.get("transforms", [])),
            validation=data.get("validation", "passed"),
            breakdown=dict(data.get("breakdown", {})),
            history_messages=int(data.get("history_messages", 0)),
            timestamp=data.get("timestamp", ""),
            context_window=data.get("context_window"),
            window_source=str(data.get("window_source", "unknown")),
            delegated_usage={k: int(v) for k, v in data.get("delegated_usage", {}).items()},
            cached_prefix_tokens=int(data.get("cached_prefix_tokens", 0)),
        )
