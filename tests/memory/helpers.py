"""Shared helpers for the memory tests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harnessed import HarnessAgent
from harnessed.memory import MemoryConfig
from harnessed.models import Model, ScriptedModel

TODAY = datetime(2025, 3, 14, 9, 30, tzinfo=UTC)


@dataclass
class Clock:
    """A settable clock for the memory manager."""

    now: datetime = TODAY

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


@dataclass
class Emitted:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, name: str, data: Mapping[str, Any]) -> None:
        self.events.append((name, dict(data)))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [data for n, data in self.events if n == name]


def memory_agent(
    root: Path,
    memory_model: Model,
    *,
    main: ScriptedModel | None = None,
    clock: Clock | None = None,
    store: Any = None,
    **config: Any,
) -> HarnessAgent:
    """An agent whose memory requests go to ``memory_model`` (dates in UTC, fixed clock)."""
    settings: dict[str, Any] = {
        "model": memory_model,
        "timezone": "UTC",
        "maintenance_interval_minutes": None,  # tests of maintenance turn it on
    }
    settings.update(config)
    agent = HarnessAgent(
        "mem",
        main or ScriptedModel(responder=lambda request: "Sure."),
        workspace=root,
        memory=MemoryConfig(**settings),
        store=store,
    )
    assert agent.memory is not None
    agent.memory.clock = clock or Clock()
    return agent


def ledger_path(root: Path, user: str = "u1", day: str = "2025-03-14") -> Path:
    return root / "agents" / "mem" / "users" / user / "memory" / f"{day}.md"


def memory_md(root: Path, user: str = "u1") -> Path:
    return root / "agents" / "mem" / "users" / user / "MEMORY.md"
