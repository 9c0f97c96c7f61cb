"""memory_search / memory_get / memory_save as the model calls them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext, ToolResultEvent
from harnessed.memory import MemoryConfig
from harnessed.messages import ToolResultBlock
from harnessed.models import ScriptedModel, ScriptedResponse
from tests.memory.helpers import Clock, ledger_path, memory_md
from tests.support.fixtures import tool_step

ALICE = RuntimeContext("alice", "s1")
BOB = RuntimeContext("bob", "s1")


async def run_tools(
    root: Path, ctx: RuntimeContext, *calls: ScriptedResponse
) -> list[ToolResultBlock]:
    agent = HarnessAgent(
        "mem",
        ScriptedModel([*calls, "done"]),
        workspace=root,
        memory=MemoryConfig(timezone="UTC"),
    )
    assert agent.memory is not None
    agent.memory.clock = Clock()
    results = [
        e.result async for e in agent.stream_events("go", ctx) if isinstance(e, ToolResultEvent)
    ]
    await agent.close()
    return results


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    memory_md(tmp_path, "alice").parent.mkdir(parents=True)
    memory_md(tmp_path, "alice").write_text("# Memory\n- Alice prefers Green Tea.\n")
    (tmp_path / "MEMORY.md").write_text("# Team\n- Deploys happen on Tuesday.\n")
    ledger = ledger_path(tmp_path, "alice", "2025-03-13")
    ledger.parent.mkdir(parents=True, exist_ok=True)
    ledger.write_text("# Memory ledger 2025-03-13\n\n## 10:00\n- The tea budget is 20 EUR.\n")
    (tmp_path / "AGENTS.md").write_text("Be kind.")
    return tmp_path


async def test_search_is_case_insensitive_and_shows_path_and_line(workspace: Path) -> None:
    (every, some, none) = await run_tools(
        workspace,
        ALICE,
        tool_step("memory_search", query="green TEA"),
        tool_step("memory_search", query="tea tuesday"),
        tool_step("memory_search", query="espresso"),
    )
    assert every.content.splitlines() == [
        "1 line(s) matching 'green TEA':",
        "agents/mem/users/alice/MEMORY.md#2: - Alice prefers Green Tea.",
    ]
    assert some.content.splitlines()[0].startswith("No line has every word")
    assert "MEMORY.md#2: - Deploys happen on Tuesday." in some.content
    assert "agents/mem/users/alice/memory/2025-03-13.md#4: - The tea budget is 20 EUR." in (
        some.content
    )
    assert none.content == "Nothing in memory matches 'espresso'."


async def test_get_reads_memory_files_by_the_paths_search_shows(workspace: Path) -> None:
    (by_search_path, by_short_path, window) = await run_tools(
        workspace,
        ALICE,
        tool_step("memory_get", path="agents/mem/users/alice/memory/2025-03-13.md"),
        tool_step("memory_get", path="memory/2025-03-13.md", start_line=4, end_line=4),
        tool_step("memory_get", path="MEMORY.md", start_line=2),
    )
    assert "    4\t- The tea budget is 20 EUR." in by_search_path.content
    assert by_short_path.content.endswith("    4\t- The tea budget is 20 EUR.")
    assert "    1\t" not in by_short_path.content
    assert "- Deploys happen on Tuesday." in window.content  # the shared workspace MEMORY.md


@pytest.mark.parametrize(
    "path",
    [
        "../AGENTS.md",
        "memory/../../../../AGENTS.md",
        "agents/mem/users/alice/memory/../../../../../AGENTS.md",
        "/etc/passwd",
        "AGENTS.md",
        "agents/mem/users/alice/memory/.state.json",
    ],
)
async def test_get_refuses_anything_but_memory_files(workspace: Path, path: str) -> None:
    (result,) = await run_tools(workspace, ALICE, tool_step("memory_get", path=path))
    assert result.is_error
    assert "Be kind." not in result.content


async def test_get_rejects_dot_dot_by_name(workspace: Path) -> None:
    (result,) = await run_tools(workspace, ALICE, tool_step("memory_get", path="../MEMORY.md"))
    assert result.is_error and "'..'" in result.content


async def test_a_user_cannot_read_or_search_another_users_memory(workspace: Path) -> None:
    (direct, search) = await run_tools(
        workspace,
        BOB,
        tool_step("memory_get", path="agents/mem/users/alice/memory/2025-03-13.md"),
        tool_step("memory_search", query="tea"),
    )
    assert direct.is_error and "not a memory file" in direct.content
    assert "budget" not in search.content and "Alice" not in search.content


async def test_save_appends_to_todays_ledger_and_is_searchable(workspace: Path) -> None:
    (saved, found) = await run_tools(
        workspace,
        ALICE,
        tool_step("memory_save", content="The demo moved to Friday.\n- Carol owns the demo."),
        tool_step("memory_search", query="demo"),
    )
    today = ledger_path(workspace, "alice", "2025-03-14")
    assert saved.content == "Saved to agents/mem/users/alice/memory/2025-03-14.md."
    text = today.read_text()
    assert "- The demo moved to Friday.\n- Carol owns the demo.\n" in text
    assert "· saved" in text
    assert "2025-03-14.md#" in found.content and "Carol owns the demo." in found.content


@pytest.mark.parametrize(
    ("config", "promise"),
    [
        (MemoryConfig(), "at most once every 30 minutes"),
        (MemoryConfig(maintenance_interval_minutes=0), "after each conversation turn"),
        (MemoryConfig(maintenance_interval_minutes=None), "only when the application runs"),
        (MemoryConfig(consolidate=False), "Nothing copies them into MEMORY.md"),
    ],
)
async def test_save_tells_the_model_it_writes_only_the_ledger(
    tmp_path: Path, config: MemoryConfig, promise: str
) -> None:
    model = ScriptedModel(["ok"])
    agent = HarnessAgent("mem", model, workspace=tmp_path, memory=config)
    await agent.call("hi", ALICE)
    await agent.close()
    (save,) = [t for t in model.requests[0].tools if t.name == "memory_save"]
    assert "today's memory ledger" in save.description
    assert "never edits MEMORY.md" in save.description and promise in save.description


async def test_save_refuses_blank_content(workspace: Path) -> None:
    (result,) = await run_tools(workspace, ALICE, tool_step("memory_save", content=" - \n "))
    assert result.is_error and "needs some text" in result.content


async def test_a_global_scope_uses_the_classic_layout(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("- Shared fact.\n")
    agent = HarnessAgent(
        "mem",
        ScriptedModel(
            [
                tool_step("memory_save", content="A global note."),
                tool_step("memory_search", query="note"),
                "ok",
            ]
        ),
        workspace=tmp_path,
        isolation_scope="global",
        memory=MemoryConfig(timezone="UTC"),
    )
    assert agent.memory is not None
    agent.memory.clock = Clock()
    results = [
        e.result async for e in agent.stream_events("go", ALICE) if isinstance(e, ToolResultEvent)
    ]
    await agent.close()
    assert results[0].content == "Saved to memory/2025-03-14.md."
    assert "memory/2025-03-14.md#4: - A global note." in results[1].content
    assert (tmp_path / "memory" / "2025-03-14.md").is_file()
