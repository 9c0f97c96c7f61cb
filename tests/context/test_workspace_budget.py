"""``max_context_tokens`` is the total budget of the workspace material (AGENTS.md, context
files, memory, knowledge), spent in a documented order; cuts show in the manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessed import ContextManifest, HarnessAgent
from harnessed.models import ScriptedModel
from harnessed.tokens import default_estimator
from tests.context.helpers import context_text, system_text
from tests.support.fixtures import CTX

WIDE = 1_000_000
COUNT = default_estimator().count_text
WORKSPACE_IDS = ("workspace/AGENTS.md", "workspace/docs/spec.md", "workspace/MEMORY.md")


def lines_of(label: str, tokens: int) -> str:
    """Numbered lines of about ``tokens`` tokens."""
    out: list[str] = []
    i = 0
    while COUNT("\n".join(out)) < tokens:
        out += [
            f"{label} line {n}: the service in zone {n} restarts at {n % 24}:00"
            for n in range(i, i + 20)
        ]
        i += 20
    return "\n".join(out)


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def workspace_tokens(manifest: ContextManifest) -> int:
    ids = (*WORKSPACE_IDS, "workspace/knowledge")
    return sum(item.tokens for item in manifest.items if item.id in ids)


async def run(root: Path, **kwargs: Any) -> tuple[ContextManifest, ScriptedModel]:
    model = ScriptedModel(["ok"], context_window=WIDE)
    agent = HarnessAgent("ws", model, workspace=root, memory_tools=False, **kwargs)
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    await agent.close()
    return manifest, model


async def test_all_workspace_material_shares_the_default_8000_tokens(tmp_path: Path) -> None:
    write(tmp_path, "AGENTS.md", lines_of("AGENTS", 3_000))
    write(tmp_path, "docs/spec.md", lines_of("SPEC", 3_000))
    write(tmp_path, "MEMORY.md", lines_of("MEMORY", 3_000))
    write(tmp_path, "knowledge/KNOWLEDGE.md", lines_of("KNOWLEDGE", 3_000))
    manifest, model = await run(tmp_path, context_files=["docs/spec.md"])
    assert 7_500 < workspace_tokens(manifest) <= 8_000  # was ~12,000: each file had its own cap
    tokens = {item.id: item.tokens for item in manifest.items}
    # AGENTS.md and the context file come first and fit whole ...
    assert tokens["workspace/AGENTS.md"] == COUNT(lines_of("AGENTS", 3_000))
    assert tokens["workspace/docs/spec.md"] == COUNT(lines_of("SPEC", 3_000))
    # ... memory gets at most half of what is left, knowledge the rest
    left = 8_000 - tokens["workspace/AGENTS.md"] - tokens["workspace/docs/spec.md"]
    assert left // 2 - 50 < tokens["workspace/MEMORY.md"] <= left // 2
    assert tokens["workspace/knowledge"] <= left - tokens["workspace/MEMORY.md"]
    assert [t for t in manifest.transforms if t.startswith("workspace_budget")] == [
        "workspace_budget_cut:workspace/MEMORY.md",
        "workspace_budget_cut:workspace/knowledge",
    ]
    refs = context_text(model.requests[0])
    assert "MEMORY line 0:" in refs and "memory_search" in refs
    assert "KNOWLEDGE line 0:" in refs and "read_file" in refs


async def test_agents_md_is_counted_and_cut_first_when_it_alone_is_too_long(
    tmp_path: Path,
) -> None:
    write(tmp_path, "AGENTS.md", lines_of("AGENTS", 1_000))
    write(tmp_path, "MEMORY.md", lines_of("MEMORY", 500))
    manifest, model = await run(tmp_path, max_context_tokens=600)
    agents = manifest.item("workspace/AGENTS.md")
    assert agents is not None and 500 < agents.tokens <= 600
    assert manifest.item("workspace/MEMORY.md") is None  # nothing worth showing was left
    assert manifest.transforms[:2] == (
        "workspace_budget_cut:workspace/AGENTS.md",
        "workspace_budget_omitted:workspace/MEMORY.md",
    )
    system = system_text(model.requests[0])
    assert "AGENTS line 0:" in system and "was cut here" in system
    assert "MEMORY line" not in context_text(model.requests[0])


async def test_what_memory_leaves_unused_goes_to_knowledge(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- the user prefers tea")
    write(tmp_path, "knowledge/KNOWLEDGE.md", lines_of("KNOWLEDGE", 3_000))
    manifest, _ = await run(tmp_path, max_context_tokens=2_000)
    knowledge = manifest.item("workspace/knowledge")
    assert knowledge is not None and 1_900 < knowledge.tokens <= 2_000
    assert manifest.item("workspace/MEMORY.md") is not None
    assert "workspace_budget_cut:workspace/knowledge" in manifest.transforms


async def test_the_shared_and_the_users_memory_split_the_memory_share(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", lines_of("SHARED", 2_000))
    write(tmp_path, "agents/ws/users/u/MEMORY.md", lines_of("PERSONAL", 2_000))
    manifest, _ = await run(tmp_path, max_context_tokens=1_000)
    shared = manifest.item("workspace/MEMORY.md")
    personal = manifest.item("workspace/agents/ws/users/u/MEMORY.md")
    assert shared is not None and personal is not None
    assert 450 < shared.tokens <= 500 and 450 < personal.tokens <= 500


async def test_material_within_the_budget_is_untouched(tmp_path: Path) -> None:
    write(tmp_path, "AGENTS.md", "Be brief.")
    write(tmp_path, "MEMORY.md", "- the user prefers tea")
    manifest, _ = await run(tmp_path)
    assert not [t for t in manifest.transforms if t.startswith("workspace_budget")]
