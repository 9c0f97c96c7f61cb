"""Skills through a real agent: layers, rescans, the listing in the budget, load_skill,
scripts through execute, allowed-tools with permission rules, drafts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harnessed import HarnessAgent, PermissionRule, RuntimeContext
from harnessed.context.policy import ContextPolicy
from harnessed.models import ScriptedModel
from harnessed.models.base import ModelRequest
from harnessed.permissions import PERMISSIONS
from harnessed.sandbox import BubblewrapSandbox
from harnessed.skills import Skills
from tests.skills.samples import VALID, write_skill
from tests.support.fixtures import tool_step

CTX = RuntimeContext("alice", "s1")


def skill_md(name: str, description: str, body: str = "Do the thing.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n"


def system_text(request: ModelRequest) -> str:
    return request.messages[0].text


def results(model: ScriptedModel, index: int = -1) -> list[str]:
    """Tool result texts in the request ``index``."""
    from harnessed.messages import ToolResultBlock

    found = []
    for message in model.requests[index].messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                found.append(block.content)
    return found


PYTHON_SANDBOX = BubblewrapSandbox(read_only_paths=tuple({sys.base_prefix, sys.prefix}))


def make_agent(
    ws: Path, model: ScriptedModel, skills: Skills | None = None, **kw: object
) -> HarnessAgent:
    return HarnessAgent(
        "helper",
        model,
        workspace=ws,
        skills=skills or Skills(),
        memory=False,
        shell=PYTHON_SANDBOX,  # skill scripts run with this interpreter
        subagents=kw.pop("subagents", False),  # these budgets are measured without them
        web=kw.pop("web", False),
        **kw,  # type: ignore[arg-type]
    )


async def test_every_request_lists_skills_and_load_skill_returns_the_body(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "pdf-processing", VALID["pdf-processing"])
    model = ScriptedModel([tool_step("load_skill", name="pdf-processing"), "done"])
    agent = make_agent(ws, model)
    await agent.call("extract the tables", CTX)
    first = system_text(model.requests[0])
    assert "pdf-processing: Extract text and tables" in first
    loaded = results(model)[0]
    assert "Run `python3 scripts/extract.py FILE`" in loaded
    assert "skills/pdf-processing" in loaded
    assert await agent.skills.usage() == {"pdf-processing": 1}  # type: ignore[union-attr]
    custom = [r.payload for r in await agent.session_log(CTX, types=["custom"])]
    assert {"name": "skill_loaded", "data": {"skill": "pdf-processing", "layer": "workspace"}} in (
        custom
    )


async def test_invalid_skills_are_skipped_with_the_rule_named(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "good", skill_md("good", "Fine."))
    write_skill(ws / "skills", "Bad", skill_md("Bad", "Upper case."))
    model = ScriptedModel(["ok"])
    agent = make_agent(ws, model)
    await agent.call("hi", CTX)
    assert "- good: Fine." in system_text(model.requests[0])
    assert "Bad" not in system_text(model.requests[0])
    problems = await agent.skills.problems(CTX)  # type: ignore[union-attr]
    assert [p.folder for p in problems] == ["skills/Bad"]
    assert "lower case" in str(problems[0])


async def test_higher_layers_win_a_name_clash(tmp_path: Path) -> None:
    app = tmp_path / "app-skills"
    ws = tmp_path / "ws"
    write_skill(app, "style", skill_md("style", "Application style guide.", "APP BODY"))
    write_skill(app, "only-app", skill_md("only-app", "From the application."))
    write_skill(ws / "skills", "style", skill_md("style", "Workspace style guide.", "WS BODY"))
    user_dir = ws / "agents" / "helper" / "users" / "alice" / "skills"
    write_skill(user_dir, "style", skill_md("style", "Alice's own style.", "ALICE BODY"))
    skills = Skills([app])
    model = ScriptedModel(
        [tool_step("load_skill", name="style"), "ok", tool_step("load_skill", name="style"), "ok"]
    )
    agent = make_agent(ws, model, skills)
    await agent.call("write", CTX)
    listing = system_text(model.requests[0])
    assert "- style: Alice's own style." in listing
    assert "- only-app: From the application." in listing
    assert "ALICE BODY" in results(model)[0]
    # another user has no own folder: the workspace layer wins for them
    await agent.call("write", RuntimeContext("bob", "s1"))
    assert "- style: Workspace style guide." in system_text(model.requests[2])
    assert "WS BODY" in results(model)[0]


async def test_a_skill_added_between_calls_is_seen_by_the_next_call(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "first", skill_md("first", "The first one."))
    model = ScriptedModel(["one", "two", "three"])
    skills = Skills()
    agent = make_agent(ws, model, skills)
    await agent.call("a", CTX)
    assert "second" not in system_text(model.requests[0])
    reads = skills.catalog.reads
    await agent.call("b", CTX)  # nothing changed: nothing re-read
    assert skills.catalog.reads == reads
    write_skill(ws / "skills", "second", skill_md("second", "Added later."))
    await agent.call("c", CTX)
    assert "- second: Added later." in system_text(model.requests[2])
    assert skills.catalog.reads == reads + 1  # only the new file was read
    # an edit is seen too
    path = ws / "skills" / "first" / "SKILL.md"
    path.write_text(skill_md("first", "Edited description."))
    os.utime(path, (1, 1))
    model.add("four")
    await agent.call("d", CTX)
    assert "- first: Edited description." in system_text(model.requests[3])


async def test_fsspec_layers_work_and_their_scripts_run(tmp_path: Path) -> None:
    import re

    import fsspec  # type: ignore[import-untyped]

    memfs = fsspec.filesystem("memory")
    memfs.pipe("/shared-skills/remote-one/SKILL.md", skill_md("remote-one", "From a URL.").encode())
    memfs.pipe("/shared-skills/remote-one/scripts/run.sh", b"echo remote-ok\n")
    model = ScriptedModel([tool_step("load_skill", name="remote-one"), "loaded"])
    agent = make_agent(tmp_path / "ws", model, Skills(["memory://shared-skills"]))
    await agent.call("load it", CTX)
    assert "- remote-one: From a URL." in system_text(model.requests[0])
    found = re.search(r"folder for execute is (\S+) ", results(model)[0])
    assert found is not None
    model.add(tool_step("execute", command=f"sh {found[1]}/scripts/run.sh"), "ran")
    await agent.call("run it", CTX)
    assert "remote-ok" in results(model)[-1]


async def test_a_skill_script_runs_through_execute(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    folder = write_skill(
        ws / "skills",
        "csv-stats",
        skill_md("csv-stats", "Summarize a CSV file.", "Run scripts/stats.py FILE."),
    )
    (folder / "scripts").mkdir()
    (folder / "scripts" / "stats.py").write_text(
        "import csv, sys\nrows = list(csv.reader(open(sys.argv[1])))\n"
        "print(f'{len(rows) - 1} rows, columns: {\",\".join(rows[0])}')\n"
    )
    (ws / "data.csv").write_text("a,b\n1,2\n3,4\n")
    model = ScriptedModel(
        [
            tool_step("load_skill", name="csv-stats"),
            tool_step(
                "execute", command=f"{sys.executable} skills/csv-stats/scripts/stats.py data.csv"
            ),
            "2 rows",
        ]
    )
    agent = make_agent(ws, model)
    await agent.call("summarize data.csv", CTX)
    loaded, ran = results(model)
    assert "scripts/stats.py" in loaded  # the files of the skill are listed
    assert "2 rows, columns: a,b" in ran


@pytest.mark.parametrize(
    "path",
    [
        "../other/SKILL.md",
        "/etc/passwd",
        "scripts/../../other/secret.txt",
        "~/x",
        "link/secret.txt",
    ],
)
async def test_load_skill_refuses_paths_outside_the_skill(tmp_path: Path, path: str) -> None:
    ws = tmp_path / "ws"
    folder = write_skill(ws / "skills", "mine", skill_md("mine", "Mine."))
    other = write_skill(ws / "skills", "other", skill_md("other", "Other."))
    (other / "secret.txt").write_text("TOP SECRET")
    (folder / "link").symlink_to(other)
    model = ScriptedModel([tool_step("load_skill", name="mine", path=path), "ok"])
    agent = make_agent(ws, model)
    await agent.call("x", CTX)
    text = results(model)[0]
    assert "TOP SECRET" not in text
    assert "root:" not in text
    assert "skill" in text.lower()


async def test_load_skill_reads_a_reference_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    folder = write_skill(ws / "skills", "mine", skill_md("mine", "Mine."))
    (folder / "references").mkdir()
    (folder / "references" / "guide.md").write_text("GUIDE TEXT")
    model = ScriptedModel([tool_step("load_skill", name="mine", path="references/guide.md"), "ok"])
    await make_agent(ws, model).call("x", CTX)
    assert results(model)[0] == "GUIDE TEXT"


async def test_allowed_tools_pre_approve_but_deny_still_wins(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(
        ws / "skills",
        "git-helper",
        skill_md("git-helper", "Git.", extra="allowed-tools: Bash(git:*) Bash(echo:*)\n"),
    )
    model = ScriptedModel(
        [
            tool_step("execute", command="echo before"),  # would ask: refused in dont_ask mode
            "ok",
        ]
    )
    agent = make_agent(
        ws,
        model,
        permission_mode="dont_ask",  # an ask becomes a refusal: no human in this test
        permission_rules=[PermissionRule.deny("execute", command="git push*")],
    )
    await agent.call("x", CTX)
    assert "refused" in results(model)[0] or "denied" in results(model)[0].lower()
    model.add(
        tool_step("load_skill", name="git-helper"),
        tool_step("execute", command="echo granted"),
        tool_step("execute", command="git push origin main"),
        tool_step("execute", command="ls"),
        "done",
    )
    await agent.call("y", CTX)
    texts = results(model)
    loaded, echo, push, ls = texts[-4:]
    assert "Pre-approved for this session" in loaded
    assert "granted" in echo and "denied" not in echo.lower()
    assert "a rule denies execute(command=git push*)" in push
    assert "denied" in ls.lower() or "refused" in ls.lower()  # not granted by the skill


@pytest.mark.parametrize("change", ["edited", "deleted"])
async def test_grants_go_when_the_skill_that_gave_them_changes(tmp_path: Path, change: str) -> None:
    ws = tmp_path / "ws"
    granting = skill_md("echoer", "Echo.", extra="allowed-tools: Bash(echo:*)\n")
    folder = write_skill(ws / "skills", "echoer", granting)
    model = ScriptedModel(
        [tool_step("load_skill", name="echoer"), tool_step("execute", command="echo one"), "ok"]
    )
    agent = make_agent(ws, model, permission_mode="dont_ask")
    await agent.call("x", CTX)
    assert "one" in results(model)[-1] and "refused" not in results(model)[-1]
    state = await agent.load_state(CTX)
    assert [g["skill"] for g in state.get(PERMISSIONS)["grants"]] == ["echoer", "echoer"]
    if change == "edited":  # the same skill, no longer pre-approving echo
        (folder / "SKILL.md").write_text(skill_md("echoer", "Echo, asking first now."))
    else:
        (folder / "SKILL.md").unlink()
        folder.rmdir()
    model.add(tool_step("execute", command="echo two"), "done")
    await agent.call("y", CTX)
    assert "refused" in results(model)[-1]
    assert (await agent.load_state(CTX)).get(PERMISSIONS).get("grants") == []


async def test_loading_a_skill_again_replaces_its_grants(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    folder = write_skill(
        ws / "skills", "tools", skill_md("tools", "T.", extra="allowed-tools: Bash(echo:*)\n")
    )
    model = ScriptedModel([tool_step("load_skill", name="tools"), "ok"])
    agent = make_agent(ws, model, permission_mode="dont_ask")
    await agent.call("x", CTX)
    (folder / "SKILL.md").write_text(skill_md("tools", "T2.", extra="allowed-tools: Read\n"))
    model.add(tool_step("load_skill", name="tools"), "ok")
    await agent.call("y", CTX)
    grants = (await agent.load_state(CTX)).get(PERMISSIONS)["grants"]
    assert [(g["tool"], g["skill"]) for g in grants] == [("read_file", "tools")]


async def test_draft_then_promote(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    model = ScriptedModel(
        [
            tool_step("propose_skill", name="Bad Name", description="x", instructions="y"),
            tool_step(
                "propose_skill",
                name="weekly-report",
                description="Write the weekly report from the task list.",
                instructions="# Weekly report\n\n1. Read the tasks.\n",
            ),
            "drafted",
        ]
    )
    skills = Skills(self_learning=True)
    agent = make_agent(ws, model, skills)
    await agent.call("remember how to do this", CTX)
    refused, saved = results(model)
    assert "not saved" in refused and "lower case" in refused
    assert "'weekly-report' saved" in saved
    assert [(d.name, d.user_id) for d in await skills.drafts()] == [("weekly-report", "alice")]
    model.add("listing")
    await agent.call("next", CTX)
    assert "weekly-report" not in system_text(model.requests[-1])  # drafts are not skills
    await skills.promote("weekly-report")
    assert await skills.drafts() == []
    model.add("listing")
    await agent.call("next", CTX)
    assert "- weekly-report: Write the weekly report" in system_text(model.requests[-1])
    with pytest.raises(LookupError):
        await skills.reject("weekly-report")


async def test_reject_deletes_a_draft_and_promote_will_not_overwrite(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "dup", skill_md("dup", "Installed."))
    skills = Skills(self_learning=True)
    make_agent(ws, ScriptedModel(), skills)
    write_skill(ws / "skills" / "_drafts", "dup", skill_md("dup", "Draft."))
    with pytest.raises(FileExistsError, match="replace=True"):
        await skills.promote("dup")  # a draft from before drafts had owners
    assert (await skills.reject("dup")).user_id is None
    assert await skills.drafts() == []
    assert (ws / "skills" / "dup" / "SKILL.md").read_text().count("Installed.") == 1


async def test_two_hundred_skills_keep_their_names_in_a_small_budget(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(200):
        name = f"skill-{i:03d}"
        write_skill(
            ws / "skills",
            name,
            skill_md(name, f"Handles case number {i} of a long list of very specific chores."),
        )
    model = ScriptedModel(["ok"])
    agent = make_agent(
        ws,
        model,
        Skills(max_listing_tokens=None),
        context_policy=ContextPolicy(max_input_tokens=4_000),
    )
    await agent.call("hi", CTX)
    system = system_text(model.requests[0])
    for i in range(200):
        assert f"skill-{i:03d}" in system
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    dropped = [t for t in manifest.transforms if t.endswith("/description")]
    assert dropped, manifest.transforms
    assert "omitted_for_budget:skills/skill-199/description" in manifest.transforms
    assert "Handles case number 0 " in system  # the first descriptions stayed
    assert "omitted_for_budget:skills/skill-000/description" not in manifest.transforms
    assert len(dropped) == system.count("\n- skill-") - system.count(": Handles")
    assert manifest.estimated_input_tokens <= manifest.input_limit


async def test_the_listing_goes_whole_when_even_names_do_not_fit(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(200):
        write_skill(ws / "skills", f"s-{i:03d}", skill_md(f"s-{i:03d}", "x"))
    model = ScriptedModel(["ok"])
    agent = make_agent(ws, model, context_policy=ContextPolicy(max_input_tokens=2_200))
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert "omitted_for_budget:instruction/skills" in manifest.transforms
    assert "s-000" not in system_text(model.requests[0])


async def test_a_skill_over_a_soft_limit_loads_with_a_warning_naming_the_rule(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As Anthropic's published ``claude-api`` skill (a 1,068-character description)."""
    ws = tmp_path / "ws"
    long_description = "Build apps with the API. " + "d" * 1_043
    write_skill(ws / "skills", "claude-api", skill_md("claude-api", long_description))
    write_skill(ws / "skills", "Broken", skill_md("Broken", "x"))  # structural: skipped
    model = ScriptedModel([tool_step("load_skill", name="claude-api"), "done"])
    agent = make_agent(ws, model)
    with caplog.at_level("WARNING", logger="harnessed.skills"):
        await agent.call("use the api", CTX)
    assert "claude-api: Build apps with the API." in system_text(model.requests[0])
    assert "Do the thing." in results(model)[0]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "claude-api" in warned and "soft limit" in warned and "at most 1024" in warned
    assert "skipped skill" in warned and "Broken" in warned
    assert "Broken" not in system_text(model.requests[0])
