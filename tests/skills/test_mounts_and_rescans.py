"""Skill folders for execute and a sandbox; listing caps; removals and concurrent scans."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import fsspec  # type: ignore[import-untyped]
import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.skills import SANDBOX_SKILLS_ROOT, Skills
from harnessed.workspace import Workspace
from tests.skills.samples import write_skill

CTX = RuntimeContext("alice", "s1")


def skill_md(name: str, description: str = "Something useful.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n"


def bound(ws: Path, skills: Skills) -> Skills:
    skills.bind(Workspace(ws), "helper")
    return skills


async def test_mounts_name_a_local_folder_for_every_visible_skill(tmp_path: Path) -> None:
    app, ws = tmp_path / "app", tmp_path / "ws"
    write_skill(app, "from-app", skill_md("from-app"))
    write_skill(ws / "skills", "from-ws", skill_md("from-ws"))
    memfs = fsspec.filesystem("memory")
    memfs.pipe("/mounted/remote/SKILL.md", skill_md("remote").encode())
    memfs.pipe("/mounted/remote/scripts/go.sh", b"echo one\n")
    skills = bound(ws, Skills([app, "memory://mounted"]))
    mounts = {m.name: m for m in await skills.mounts(CTX)}
    assert mounts["from-app"].source == app.resolve() / "from-app"
    assert mounts["from-ws"].source == ws.resolve() / "skills" / "from-ws"
    assert mounts["remote"].target == f"{SANDBOX_SKILLS_ROOT}/remote"
    copy = mounts["remote"].source
    assert (copy / "scripts" / "go.sh").read_text() == "echo one\n"
    # a changed script gives a fresh copy; the old one is never half-updated
    memfs.pipe("/mounted/remote/scripts/go.sh", b"echo two!\n")
    again = {m.name: m for m in await skills.mounts(CTX)}["remote"].source
    assert again != copy and (again / "scripts" / "go.sh").read_text() == "echo two!\n"


async def test_with_a_sandbox_root_the_model_is_given_the_mount_path(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "tool-kit", skill_md("tool-kit"))
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("load_skill", {"name": "tool-kit"})]), "ok"]
    )
    agent = HarnessAgent(
        "helper", model, workspace=ws, memory=False, skills=Skills(sandbox_root="/skills/")
    )
    await agent.call("go", CTX)
    assert "folder for execute is /skills/tool-kit " in model.requests[-1].messages[-1].text
    with pytest.raises(ValueError, match="sandbox_root"):
        Skills(sandbox_root="relative")


async def test_a_removed_skill_disappears_and_an_unknown_name_is_a_clear_error(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "short-lived", skill_md("short-lived"))
    skills = bound(ws, Skills())
    assert [s.name for s in await skills.available(CTX)] == ["short-lived"]
    shutil.rmtree(ws / "skills" / "short-lived")
    assert await skills.available(CTX) == []
    with pytest.raises(LookupError, match="no skill named 'short-lived'"):
        await skills.get("short-lived", CTX)


async def test_concurrent_scans_read_each_file_once(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(30):
        write_skill(ws / "skills", f"s{i}", skill_md(f"s{i}"))
    skills = bound(ws, Skills())
    results = await asyncio.gather(*(skills.available(CTX) for _ in range(8)))
    assert all(len(r) == 30 for r in results)
    assert skills.catalog.reads == 30


async def test_the_listing_cap_is_recorded_in_the_manifest(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(50):
        write_skill(ws / "skills", f"k-{i:02d}", skill_md(f"k-{i:02d}", "word " * 60))
    model = ScriptedModel(["ok"])
    agent = HarnessAgent(
        "helper", model, workspace=ws, memory=False, skills=Skills(max_listing_tokens=600)
    )
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    omitted = [t for t in manifest.transforms if t.endswith("/description")]
    assert "omitted_for_budget:skills/k-49/description" in omitted
    item = next(i for i in manifest.items if i.id == "instruction/skills")
    assert item.tokens <= 600
    assert "k-49" in model.requests[0].messages[0].text


async def test_user_layer_follows_the_isolation_scope(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", scope="global")
    skills = Skills()
    skills.bind(ws, "helper")
    assert [layer.label for layer in skills.layers(CTX)] == ["workspace"]
    per_session = Skills()
    per_session.bind(Workspace(tmp_path / "ws2", scope="session"), "helper")
    user = per_session.layers(CTX)[-1]
    assert user.label == "user" and user.root.endswith("/sessions/s1/skills")


async def test_an_agent_without_a_workspace_uses_its_skill_dirs(tmp_path: Path) -> None:
    app = tmp_path / "app"
    write_skill(app, "portable", skill_md("portable", "Works anywhere."))
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("load_skill", {"name": "portable"})]), "ok"]
    )
    skills = Skills([app])
    agent = HarnessAgent("helper", model, skills=skills)
    await agent.call("go", CTX)
    assert "- portable: Works anywhere." in model.requests[0].messages[0].text
    assert "Body of portable." in model.requests[-1].messages[-1].text
    assert await skills.usage() == {"portable": 1}
    with pytest.raises(ValueError, match="needs a workspace"):
        HarnessAgent("h2", ScriptedModel(), skills=Skills([app], self_learning=True))


async def test_a_remote_layer_is_rescanned_by_one_listing(tmp_path: Path) -> None:
    memfs = fsspec.filesystem("memory")
    memfs.pipe("/rescanned/one/SKILL.md", skill_md("one", "First text.").encode())
    memfs.pipe("/rescanned/one/assets/big.bin", b"\0" * 10)
    memfs.pipe("/rescanned/_drafts/two/SKILL.md", skill_md("two").encode())
    memfs.pipe("/rescanned/empty/readme.txt", b"not a skill")
    skills = bound(tmp_path / "ws", Skills(["memory://rescanned"], workspace_skills=False))
    first = await skills.available(CTX)
    assert [(s.name, s.description) for s in first] == [("one", "First text.")]
    assert await skills.available(CTX) == first and skills.catalog.reads == 1
    memfs.pipe("/rescanned/one/SKILL.md", skill_md("one", "Second, longer text.").encode())
    assert [s.description for s in await skills.available(CTX)] == ["Second, longer text."]


async def test_skills_plug_in_as_a_capability_too(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "cap-skill", skill_md("cap-skill", "Through capabilities."))
    model = ScriptedModel(["ok"])
    skills = Skills()
    agent = HarnessAgent("helper", model, workspace=ws, memory=False, capabilities=[skills])
    assert agent.skills is skills
    assert "load_skill" in agent.toolkit and "propose_skill" not in agent.toolkit
    await agent.call("hi", CTX)
    assert "- cap-skill: Through capabilities." in model.requests[0].messages[0].text
    plain = HarnessAgent("plain", ScriptedModel(["ok"]), workspace=ws, memory=False, skills=False)
    assert plain.skills is None and "load_skill" not in plain.toolkit


async def test_lower_case_skill_files_load_on_local_and_remote_layers(tmp_path: Path) -> None:
    """The reference accepts ``skill.md``: such skills load (and load_skill finds the body)."""
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "local-lower", skill_md("local-lower"), "skill.md")
    (ws / "skills" / "local-lower" / "notes.txt").write_text("extra")
    memfs = fsspec.filesystem("memory")
    memfs.pipe("/lowered/remote-lower/skill.md", skill_md("remote-lower").encode())
    memfs.pipe("/lowered/both/SKILL.md", skill_md("both", "Upper wins.").encode())
    memfs.pipe("/lowered/both/skill.md", skill_md("both", "Lower loses.").encode())
    skills = bound(ws, Skills(["memory://lowered"]))
    found = {s.name: s for s in await skills.available(CTX)}
    assert sorted(found) == ["both", "local-lower", "remote-lower"]
    assert found["both"].description == "Upper wins."
    assert found["local-lower"].file == "skill.md" and found["local-lower"].meta.notes
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[ScriptedToolCall("load_skill", {"name": "local-lower"})]),
            "done",
        ]
    )
    agent = HarnessAgent(
        "helper", model, workspace=ws, memory=False, capabilities=[Skills(user_skills=False)]
    )
    await agent.call("go", CTX)
    result = model.requests[1].messages[-1].text
    assert "Body of local-lower." in result and "- notes.txt" in result
    assert "- skill.md" not in result
