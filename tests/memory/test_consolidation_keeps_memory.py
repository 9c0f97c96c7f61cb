"""Data loss: a consolidation answer never silently drops what ``MEMORY.md`` held.

A model that answers the flush's word ``NOTHING``, an empty string, a bare heading, or a text
far shorter than the curated file is refused like an empty answer: ``MEMORY.md`` keeps its
text, the watermark stays and the entries are merged by the next good answer. Every accepted
answer keeps the text it replaced under ``memory/archive/``, readable with ``memory_get``, and
two consolidations in the same second never overwrite each other's kept version.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.memory import ConsolidationError
from harnessed.models import ScriptedModel
from tests.memory.helpers import memory_agent, memory_md
from tests.memory.test_consolidate import write_ledger

CTX = RuntimeContext("u1", "s1")
CURATED = "# Memory\n\n## People\n" + "".join(
    f"- Colleague {n} works on project {n} and prefers meetings after ten.\n" for n in range(12)
)
STATE = "agents/mem/users/u1/memory/.state.json"
ARCHIVE = "agents/mem/users/u1/memory/archive"


def curated(root: Path) -> None:
    path = memory_md(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CURATED)


def kept(root: Path) -> list[Path]:
    folder = root / ARCHIVE
    return sorted(folder.glob("MEMORY-*.md")) if folder.is_dir() else []


@pytest.mark.parametrize(
    "answer",
    [
        "NOTHING",
        "**Nothing.**",
        "```markdown\nNOTHING\n```",
        "No new facts to add.",
        "",
        "   \n\n",
        "#",
        "---",
        "# Memory\n- Colleague 3 works on project 3.",  # far shorter: the rest would be lost
    ],
)
async def test_a_degenerate_answer_changes_nothing_and_the_entries_stay_pending(
    tmp_path: Path, answer: str
) -> None:
    curated(tmp_path)
    write_ledger(tmp_path, "2025-03-14", "Colleague 12 joined the project.")
    model = ScriptedModel([answer])
    agent = memory_agent(tmp_path, model)
    assert agent.memory is not None
    with pytest.raises(ConsolidationError, match="nothing was changed"):
        await agent.memory.consolidate(CTX)
    assert memory_md(tmp_path).read_text() == CURATED
    assert not (tmp_path / STATE).exists()  # the watermark did not move
    assert kept(tmp_path) == []

    merged = CURATED + "- Colleague 12 joined the project.\n"
    model.add(merged)  # the next good answer merges the same entries
    assert (await agent.memory.consolidate(CTX)).status == "merged"
    assert "Colleague 12 joined" in model.requests[-1].messages[-1].text
    assert memory_md(tmp_path).read_text() == merged
    (version,) = kept(tmp_path)
    assert version.read_text() == CURATED


async def test_a_background_maintenance_answered_nothing_loses_nothing(tmp_path: Path) -> None:
    curated(tmp_path)
    write_ledger(tmp_path, "2025-03-14", "Colleague 12 joined the project.")
    agent = memory_agent(tmp_path, ScriptedModel(["NOTHING"]))
    assert agent.memory is not None
    with pytest.raises(ConsolidationError):
        await agent.memory.maintain(CTX, force=True)
    assert memory_md(tmp_path).read_text() == CURATED


async def test_each_accepted_answer_keeps_the_text_it_replaced(tmp_path: Path) -> None:
    curated(tmp_path)
    versions = [CURATED + f"- Fact {n}.\n" for n in range(3)]
    model = ScriptedModel(list(versions))
    agent = memory_agent(tmp_path, model)  # a fixed clock: all three in the same second
    assert agent.memory is not None
    for n in range(3):
        write_ledger(tmp_path, "2025-03-14", f"Fact {n}.")
        assert (await agent.memory.consolidate(CTX)).status == "merged"
    assert memory_md(tmp_path).read_text() == versions[-1]
    found = kept(tmp_path)
    assert [p.read_text() for p in found] == [CURATED, versions[0], versions[1]]
    assert [p.name for p in found] == [
        f"MEMORY-20250314T093000Z-{n:04d}.md" for n in (1, 2, 3)
    ]  # names sort by time, then by order within one second

    shown = await agent.memory.get(CTX, f"memory/archive/{found[0].name}")
    assert "Colleague 11 works on project 11" in shown  # memory_get reads the archive
    matches, _ = await agent.memory.search(CTX, "Fact 0")
    assert matches and not any("archive" in m.path for m in matches)  # no stale copies


async def test_the_oldest_versions_beyond_the_kept_number_go(tmp_path: Path) -> None:
    curated(tmp_path)
    versions = [CURATED + f"- Fact {n}.\n" for n in range(4)]
    agent = memory_agent(tmp_path, ScriptedModel(list(versions)), memory_versions_kept=2)
    assert agent.memory is not None
    for n in range(4):
        write_ledger(tmp_path, "2025-03-14", f"Fact {n}.")
        await agent.memory.consolidate(CTX)
    assert [p.read_text()[-9:] for p in kept(tmp_path)] == [v[-9:] for v in versions[1:3]]


async def test_an_answer_equal_to_the_file_keeps_no_copy(tmp_path: Path) -> None:
    curated(tmp_path)
    write_ledger(tmp_path, "2025-03-14", "Colleague 3 works on project 3.")
    agent = memory_agent(tmp_path, ScriptedModel([CURATED]))
    assert agent.memory is not None
    assert (await agent.memory.consolidate(CTX)).status == "merged"
    assert kept(tmp_path) == [] and (tmp_path / STATE).exists()


async def test_a_file_over_the_cap_may_shrink_to_the_cap(tmp_path: Path) -> None:
    """A hand-written MEMORY.md far over the cap must be allowed to come down to it."""
    memory_md(tmp_path).parent.mkdir(parents=True)
    memory_md(tmp_path).write_text(CURATED * 20)
    write_ledger(tmp_path, "2025-03-14", "Colleague 12 joined the project.")
    agent = memory_agent(tmp_path, ScriptedModel([CURATED]), memory_max_tokens=400)
    assert agent.memory is not None
    assert (await agent.memory.consolidate(CTX)).status == "merged"
    assert memory_md(tmp_path).read_text() == CURATED
    assert kept(tmp_path)[0].read_text() == CURATED * 20


async def test_a_small_memory_may_shrink_but_not_to_nothing(tmp_path: Path) -> None:
    memory_md(tmp_path).parent.mkdir(parents=True)
    memory_md(tmp_path).write_text("# Memory\n- Tea.\n- Old desk: 4B.\n")
    write_ledger(tmp_path, "2025-03-14", "The desk moved; it is no longer 4B.")
    agent = memory_agent(tmp_path, ScriptedModel(["- Tea."]))
    assert agent.memory is not None
    assert (await agent.memory.consolidate(CTX)).status == "merged"
    assert memory_md(tmp_path).read_text() == "- Tea.\n"
