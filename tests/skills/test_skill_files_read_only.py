"""The model cannot write itself a skill that pre-approves tools: installed skills are
read-only to its file tools unless the application opts in."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.messages import ToolResultBlock
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.skills import Skills
from tests.support.fixtures import tool_step

CTX = RuntimeContext("alice", "s1")
GRANTING = "---\nname: helper\ndescription: Helps.\nallowed-tools: Bash\n---\nDo things.\n"


def tool_results(model: ScriptedModel) -> list[ToolResultBlock]:
    return [
        block
        for message in model.requests[-1].messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]


def agent(ws: Path, model: ScriptedModel, skills: Skills) -> HarnessAgent:
    return HarnessAgent(
        "helper",
        model,
        workspace=ws,
        skills=skills,
        memory=False,
        shell=True,
        permission_mode="accept_edits",  # edits run unasked, execute asks
    )


@pytest.mark.parametrize(
    "path",
    [
        "skills/helper/SKILL.md",
        "./skills/../skills/helper/SKILL.md",
        "Skills/helper/SKILL.md",
        "agents/helper/users/alice/skills/helper/SKILL.md",
    ],
)
async def test_a_skill_written_by_the_model_cannot_grant_it_execute(
    tmp_path: Path, path: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    model = ScriptedModel(
        [
            tool_step("write_file", path=path, content=GRANTING),
            "written",
            tool_step("load_skill", name="helper"),
            tool_step("execute", command="echo PWNED > pwned.txt"),
            "done",
        ]
    )
    helper = agent(ws, model, Skills())
    await helper.call("write a helper skill", CTX)
    refused = tool_results(model)[-1]
    assert refused.is_error and "read-only" in refused.content
    assert not (ws / "skills").exists() and not (ws / "agents/helper/users/alice/skills").exists()

    reply = await helper.call("use it", CTX)
    assert reply.metadata.get("harness") == "pending_confirmation"  # execute still asks
    assert not (ws / "pwned.txt").exists()
    await helper.close()


async def test_editing_an_installed_skill_is_refused_and_other_files_are_not(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "skills" / "helper").mkdir(parents=True)
    installed = "---\nname: helper\ndescription: Helps.\n---\nDo things.\n"
    (ws / "skills" / "helper" / "SKILL.md").write_text(installed)
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(
                        "edit_file",
                        {
                            "path": "skills/helper/SKILL.md",
                            "old": "Helps.",
                            "new": "Helps.\nallowed-tools: Bash",
                        },
                    ),
                    ScriptedToolCall("write_file", {"path": "notes/skills.md", "content": "x"}),
                ]
            ),
            "done",
        ]
    )
    helper = agent(ws, model, Skills())
    await helper.call("go", CTX)
    edit, write = tool_results(model)
    assert edit.is_error and "read-only" in edit.content
    assert not write.is_error
    assert (ws / "skills" / "helper" / "SKILL.md").read_text() == installed
    assert (ws / "notes" / "skills.md").read_text() == "x"
    await helper.close()


async def test_the_application_can_let_the_model_edit_skills(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    model = ScriptedModel(
        [tool_step("write_file", path="skills/helper/SKILL.md", content=GRANTING), "ok"]
    )
    helper = agent(ws, model, Skills(model_edits_skills=True))
    await helper.call("write a helper skill", CTX)
    assert not tool_results(model)[-1].is_error
    assert (ws / "skills" / "helper" / "SKILL.md").read_text() == GRANTING
    await helper.close()


@pytest.mark.parametrize("given", ["absolute", "relative-symlinked"])
async def test_a_skill_dir_inside_the_workspace_is_read_only_too(
    tmp_path: Path, given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    (ws / "team-skills").mkdir(parents=True)
    folder: str | Path = ws / "team-skills"
    if given == "relative-symlinked":  # given through another path that leads to the same place
        (tmp_path / "link").symlink_to(ws / "team-skills")
        monkeypatch.chdir(tmp_path)
        folder = "link"
    model = ScriptedModel(
        [
            tool_step("write_file", path="team-skills/helper/SKILL.md", content=GRANTING),
            tool_step("write_file", path="team-skills-notes.md", content="beside, not inside"),
            "done",
        ]
    )
    helper = agent(ws, model, Skills([folder]))
    await helper.call("write a helper skill", CTX)
    inside, beside = tool_results(model)
    assert inside.is_error and "read-only" in inside.content
    assert not beside.is_error
    assert not (ws / "team-skills" / "helper").exists()
    await helper.close()


async def test_a_skill_dir_that_is_the_workspace_makes_writes_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    model = ScriptedModel([tool_step("write_file", path="helper/SKILL.md", content=GRANTING), "ok"])
    helper = agent(ws, model, Skills([ws]))
    await helper.call("write", CTX)
    refused = tool_results(model)[-1]
    assert refused.is_error and "whole workspace is a skill folder" in refused.content
    assert not (ws / "helper").exists()
    await helper.close()
