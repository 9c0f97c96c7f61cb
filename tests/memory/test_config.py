"""MemoryConfig: defaults of BEHAVIOUR.md §4 and errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed import HarnessAgent
from harnessed.memory import MemoryConfig
from harnessed.models import ScriptedModel


def test_defaults() -> None:
    config = MemoryConfig()
    assert config.flush_before_compaction is True
    assert config.flush_after_call == "never" and config.flush_interval_seconds is None
    assert config.memory_max_tokens == 4_000
    assert config.maintenance_interval_minutes == 30
    assert config.archive_after_days == 90
    assert MemoryConfig(flush_after_call="always").flush_interval_seconds == 0
    assert MemoryConfig(flush_after_call=2.5).flush_interval_seconds == 150


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"flush_after_call": "sometimes"}, "flush_after_call"),
        ({"flush_after_call": 0}, "flush_after_call"),
        ({"flush_after_call": True}, "flush_after_call"),
        ({"flush_window_tokens": 10}, "flush_window_tokens"),
        ({"memory_max_tokens": "4000"}, "memory_max_tokens"),
        ({"archive_after_days": 0}, "archive_after_days"),
        ({"maintenance_interval_minutes": -1}, "maintenance_interval_minutes"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"model": 42}, "model"),
        ({"consolidate": "yes"}, "consolidate"),
    ],
)
def test_bad_values_name_the_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises((ValueError, TypeError), match=f"MemoryConfig.{field}"):
        MemoryConfig(**changes)  # type: ignore[arg-type]


def test_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        MemoryConfig().consolidate = False  # type: ignore[misc]


def test_memory_needs_a_workspace(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="memory needs a workspace"):
        HarnessAgent("a", ScriptedModel(), memory=MemoryConfig())
    cheap = ScriptedModel(name="cheap")
    agent = HarnessAgent("a", ScriptedModel(), workspace=tmp_path, memory=MemoryConfig(model=cheap))
    assert agent.memory is not None and agent.memory.aux.model is cheap
    with pytest.raises(ValueError, match="unknown model provider"):
        HarnessAgent("a", ScriptedModel(), workspace=tmp_path, memory=MemoryConfig(model="x:y"))
