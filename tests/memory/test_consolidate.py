"""Consolidation into MEMORY.md (watermark, token cap) and maintenance (archive, interval)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.memory import ConsolidationError
from harnessed.models import ModelRequest, ScriptedModel
from tests.memory.helpers import Clock, ledger_path, memory_agent, memory_md

CTX = RuntimeContext("u1", "s1")


def write_ledger(root: Path, day: str, *facts: str) -> Path:
    path = ledger_path(root, day=day)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"- {f}\n" for f in facts)
    if path.exists():
        path.write_text(path.read_text() + f"\n## later\n{body}")
    else:
        path.write_text(f"# Memory ledger {day}\n\n## 10:00\n{body}")
    return path


def entries(request: ModelRequest) -> str:
    return request.messages[-1].text.split("<entries>")[1].split("</entries>")[0]


def state(root: Path) -> dict:
    return json.loads((root / "agents/mem/users/u1/memory/.state.json").read_text())


async def test_pending_entries_are_merged_and_the_watermark_moves(tmp_path: Path) -> None:
    write_ledger(tmp_path, "2025-03-12", "Falcon ships on April 1st.")
    write_ledger(tmp_path, "2025-03-13", "The user prefers tea.")
    model = ScriptedModel(
        [
            "```markdown\n# Memory\n- Falcon ships on April 1st.\n- Prefers tea.\n```",
            "# Memory\n- Falcon ships on April 1st.\n- Prefers tea.\n- Bob is on leave.",
        ]
    )
    agent = memory_agent(tmp_path, model)
    assert agent.memory is not None
    result = await agent.memory.consolidate(CTX)
    assert result.status == "merged" and result.requests == 1
    assert memory_md(tmp_path).read_text() == (
        "# Memory\n- Falcon ships on April 1st.\n- Prefers tea.\n"
    )  # the code fence is gone
    first = entries(model.requests[0])
    assert "2025-03-12.md" in first and "Falcon ships" in first and "prefers tea" in first
    assert model.requests[0].purpose == "summary"
    assert state(tmp_path)["watermark"]["ledger"] == "2025-03-13.md"

    again = await agent.memory.consolidate(CTX)
    assert again.status == "up_to_date" and len(model.requests) == 1  # no model call

    write_ledger(tmp_path, "2025-03-13", "Bob is on leave.")
    await agent.memory.consolidate(CTX)
    second = entries(model.requests[1])
    assert "Bob is on leave." in second
    assert "Falcon" not in second and "prefers tea" not in second  # only what is new
    assert "Prefers tea." in model.requests[1].messages[-1].text  # the current file is shown
    assert "Bob is on leave." in memory_md(tmp_path).read_text()


async def test_an_answer_over_the_cap_is_retried_once_then_changes_nothing(
    tmp_path: Path,
) -> None:
    write_ledger(tmp_path, "2025-03-13", "A fact.")
    memory_md(tmp_path).write_text("# Memory\n- Old fact.\n")
    long = "# Memory\n" + "- a long and rambling fact about many things\n" * 60
    model = ScriptedModel([long, long])
    agent = memory_agent(tmp_path, model, memory_max_tokens=100)
    assert agent.memory is not None
    with pytest.raises(ConsolidationError, match="cap of 100 tokens"):
        await agent.memory.consolidate(CTX)
    assert len(model.requests) == 2
    assert "over the limit of 100" in model.requests[1].messages[-1].text
    assert memory_md(tmp_path).read_text() == "# Memory\n- Old fact.\n"
    assert not (tmp_path / "agents/mem/users/u1/memory/.state.json").exists()

    model.add("# Memory\n- Old fact.\n- A fact.")  # a good answer later picks the entries up
    assert (await agent.memory.consolidate(CTX)).status == "merged"
    assert "A fact." in memory_md(tmp_path).read_text()


async def test_an_empty_answer_changes_nothing(tmp_path: Path) -> None:
    write_ledger(tmp_path, "2025-03-13", "A fact.")
    agent = memory_agent(tmp_path, ScriptedModel(["   "]))
    assert agent.memory is not None
    with pytest.raises(ConsolidationError, match="empty"):
        await agent.memory.consolidate(CTX)
    assert not memory_md(tmp_path).exists()


async def test_maintenance_archives_old_ledgers_then_consolidates_them_too(
    tmp_path: Path,
) -> None:
    old = write_ledger(tmp_path, "2024-11-01", "An old decision.")  # 133 days before "today"
    recent = write_ledger(tmp_path, "2025-03-13", "A recent fact.")
    model = ScriptedModel(["# Memory\n- An old decision.\n- A recent fact."])
    clock = Clock()
    agent = memory_agent(tmp_path, model, clock=clock, maintenance_interval_minutes=30)
    assert agent.memory is not None
    result = await agent.memory.maintain(CTX)
    assert result is not None
    assert result.archived == ("agents/mem/users/u1/memory/2024-11-01.md",)
    assert not old.exists() and recent.exists()
    assert (old.parent / "archive" / "2024-11-01.md").read_text().endswith("An old decision.\n")
    assert "An old decision." in entries(model.requests[0])  # archived, still consolidated
    assert state(tmp_path)["maintained_at"] == clock.now.timestamp()

    clock.advance(10)
    assert await agent.memory.maintain(CTX) is None  # ran 10 minutes ago: not due
    clock.advance(25)
    assert await agent.memory.maintain(CTX) is not None  # due again (up to date: no call)
    assert len(model.requests) == 1


async def test_maintenance_runs_in_the_background_after_calls_when_due(tmp_path: Path) -> None:
    write_ledger(tmp_path, "2025-03-13", "A recent fact.")
    model = ScriptedModel(["# Memory\n- A recent fact."])
    clock = Clock()
    agent = memory_agent(tmp_path, model, clock=clock, maintenance_interval_minutes=30)
    await agent.call("hello", CTX)
    await agent.call("again", CTX)  # within the interval: no second maintenance
    await agent.close()
    assert len(model.requests) == 1
    assert memory_md(tmp_path).read_text() == "# Memory\n- A recent fact.\n"
    records = await agent.session_log(CTX, types=["context/build"])
    assert [r.payload["purpose"] for r in records].count("summary") == 1


async def test_a_failed_background_maintenance_is_recorded_not_raised(tmp_path: Path) -> None:
    write_ledger(tmp_path, "2025-03-13", "A fact.")
    agent = memory_agent(tmp_path, ScriptedModel([""]), maintenance_interval_minutes=30)
    reply = await agent.call("hello", CTX)
    await agent.close()
    assert reply.text == "Sure."
    errors = [r for r in await agent.session_log(CTX, types=["custom"])]
    assert errors[-1].payload == {
        "name": "memory_error",
        "data": {"work": "maintenance", "error_type": "ConsolidationError"},
    }
    assert not memory_md(tmp_path).exists()
