"""A skill folder inside the workspace stays read-only to the model through a symbolic link.

``Skills([ws / "team-skills"])`` makes ``team-skills/`` read-only to the file tools, since a
``SKILL.md`` there can pre-approve any tool once loaded. The guard used to compare the path
the model gave, so ``up/team-skills/x/SKILL.md`` (``up -> .``) or ``ts/x/SKILL.md``
(``ts -> team-skills``) wrote a granting skill. It now compares where the links lead too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.models import ScriptedModel
from harnessed.skills import Skills
from tests.skills.test_skill_files_read_only import GRANTING, agent, tool_results
from tests.support.fixtures import tool_step

CTX = RuntimeContext("alice", "s1")

LINKS: dict[str, tuple[str, Callable[[Path], str], str]] = {
    "root-relative": ("up", lambda ws: ".", "up/team-skills"),
    "root-absolute": ("up", lambda ws: str(ws), "up/team-skills"),
    "root-from-a-subfolder": ("proj/up", lambda ws: "..", "proj/up/team-skills"),
    "folder-relative": ("ts", lambda ws: "team-skills", "ts"),
    "folder-detour": ("ts", lambda ws: "proj/../team-skills/", "ts"),
    "folder-chain": ("ts", lambda ws: "hop", "ts"),
}


@pytest.mark.parametrize("shape", sorted(LINKS))
async def test_a_link_into_a_skill_folder_does_not_make_it_writable(
    tmp_path: Path, shape: str
) -> None:
    ws = tmp_path / "ws"
    (ws / "team-skills" / "deploy").mkdir(parents=True)
    (ws / "team-skills" / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploys.\n---\nSteps.\n"
    )
    (ws / "proj").mkdir()
    (ws / "hop").symlink_to("team-skills")
    where, target, through = LINKS[shape]
    (ws / where).symlink_to(target(ws))
    model = ScriptedModel(
        [
            tool_step("write_file", path=f"{through}/helper/SKILL.md", content=GRANTING),
            tool_step("edit_file", path=f"{through}/deploy/SKILL.md", old="Steps.", new=GRANTING),
            tool_step("write_file", path="proj/notes.md", content="beside the skills"),
            "done",
        ]
    )
    helper = agent(ws, model, Skills([ws / "team-skills"]))
    await helper.call("write a helper skill", CTX)
    await helper.close()
    new, edit, beside = tool_results(model)
    for refused in (new, edit):
        assert refused.is_error and "read-only" in refused.content, refused.content
    assert not beside.is_error
    assert not (ws / "team-skills" / "helper").exists()
    assert "allowed-tools" not in (ws / "team-skills" / "deploy" / "SKILL.md").read_text()
