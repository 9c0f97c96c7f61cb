"""Declarations: workspace files (valid, invalid, hidden, tools allowlist), code, agents."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.events import ToolResultEvent
from harnessed.models import ScriptedModel
from harnessed.models.scripted import ScriptedToolCall
from harnessed.subagents import SpecError, Subagents, SubagentSpec, parse_spec_file
from tests.subagents.helpers import calls, child_model, parent, spawn, system_text
from tests.support.fixtures import collect


def write(ws: Path, name: str, text: str) -> None:
    (ws / "subagents").mkdir(exist_ok=True)
    (ws / "subagents" / name).write_text(text)


def test_parse_spec_file_reads_front_matter_and_body() -> None:
    spec = parse_spec_file(
        "reviewer",
        "---\ndescription: Reviews diffs.\nmodel: openai:gpt-4.1-mini\n"
        "tools: [read_file, grep_files]\nmax_iters: 4\nworkspace: isolated\nhidden: true\n"
        "---\nYou review.\n\nBe brief.\n",
    )
    assert spec.id == "reviewer"
    assert spec.description == "Reviews diffs."
    assert spec.model == "openai:gpt-4.1-mini"
    assert spec.tools == ("read_file", "grep_files")
    assert spec.max_iters == 4
    assert spec.workspace == "isolated"
    assert spec.hidden is True
    assert spec.system_prompt == "You review.\n\nBe brief."


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("You review.", "must start with a '---' line"),
        ("---\ndescription: x\n", "no closing '---'"),
        ("---\nmodel: m\n---\nbody", "required field 'description' is missing"),
        ("---\ndescription: [unclosed\n---\n", "not valid YAML"),
        ("---\ndescription: x\ncolour: red\n---\n", "unknown field(s) colour"),
        ("---\ndescription: x\nmax_iters: 0\n---\n", "max_iters must be a whole number"),
        ("---\ndescription: x\nworkspace: private\n---\n", "workspace must be 'shared' or"),
        ("---\ndescription: x\nhidden: maybe\n---\n", "hidden must be true or false"),
        ("---\ndescription: '  '\n---\n", "description must be non-blank"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
    ],
)
def test_invalid_files_name_the_problem(text: str, problem: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec_file("bad", text)
    assert "subagents/bad.md" in str(err.value)
    assert problem in str(err.value)


def test_spec_fields_are_validated_at_construction() -> None:
    with pytest.raises(SpecError, match="sub-agent id 'Bad Id'"):
        SubagentSpec("Bad Id", "x")
    with pytest.raises(SpecError, match="tools must be a list"):
        SubagentSpec("a", "x", tools="read_file")  # type: ignore[arg-type]


async def test_workspace_files_valid_invalid_and_hidden(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "reviewer.md", "---\ndescription: Reviews a change.\n---\nYou review.")
    write(tmp_path, "secret.md", "---\ndescription: Internal checks.\nhidden: true\n---\nSh.")
    write(tmp_path, "broken.md", "---\nmodel: x\n---\n")
    write(tmp_path, "notes.txt", "not a declaration")
    model = ScriptedModel([calls(ScriptedToolCall("agent_list", {})), "listed"], name="parent")
    agent = HarnessAgent("boss", model, workspace=tmp_path, capabilities=[Subagents()])
    with caplog.at_level(logging.WARNING):
        events = await collect(agent, "who can help?", RuntimeContext())
    listing = next(e for e in events if isinstance(e, ToolResultEvent)).result.content
    assert '"reviewer"' in listing and '"general-purpose"' in listing
    assert "secret" not in listing and "broken" not in listing
    problems = agent.capability(Subagents).declarations.problems
    assert problems == ["subagents/broken.md: the required field 'description' is missing"]
    assert "subagents/broken.md" in caplog.text
    # the list of sub-agents is shown in the runtime state, hidden ones left out
    state_text = model.requests[0].messages[-1].text
    assert "- reviewer: Reviews a change." in state_text
    assert "secret" not in state_text
    specs = await agent.capability(Subagents).declarations.all()
    assert specs["secret"].hidden  # still spawnable by id
    await agent.close()


@tool(read_only=True)
def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: found"


@tool
def deploy() -> str:
    """Deploy the service."""
    return "deployed"


async def test_tools_allowlist_limits_the_childs_tools(tmp_path: Path) -> None:
    write(
        tmp_path,
        "researcher.md",
        "---\ndescription: Finds things.\ntools: [lookup, read_file]\n---\nYou research.",
    )
    seen: list[list[str]] = []

    def child_answer(request: object) -> str:
        seen.append(sorted(t.name for t in request.tools))  # type: ignore[attr-defined]
        return "found it"

    model = ScriptedModel([calls(spawn("researcher", "find x")), "ok"], name="parent")
    # the file has no model: the child uses the parent's — route by system prompt
    original = model.stream

    async def routed(request):  # type: ignore[no-untyped-def]
        if "You research." in system_text(request):
            async for chunk in child_model(child_answer).stream(request):
                yield chunk
            return
        async for chunk in original(request):
            yield chunk

    model.stream = routed  # type: ignore[method-assign]
    agent = HarnessAgent(
        "boss", model, workspace=tmp_path, tools=[lookup, deploy], capabilities=[Subagents()]
    )
    await agent.call("go", RuntimeContext())
    assert seen
    child_tools = seen[0]
    assert "lookup" in child_tools and "read_file" in child_tools
    assert "deploy" not in child_tools and "write_file" not in child_tools
    # the child still has its own sub-agent tools (depth permitting)
    assert "agent_spawn" in child_tools
    await agent.close()


async def test_allowlist_naming_a_missing_tool_is_an_error_result() -> None:
    spec = SubagentSpec("r", "x", tools=("nope",), model=child_model("hi"))
    model = ScriptedModel([calls(spawn("r", "do")), "ok"])
    agent = parent(model, spec)
    events = await collect(agent, "go", RuntimeContext())
    result = next(e for e in events if isinstance(e, ToolResultEvent)).result
    assert result.is_error and "allows tools the parent agent does not have: nope" in result.content
    await agent.close()


async def test_unknown_sub_agent_is_an_error_listing_the_available_ones() -> None:
    model = ScriptedModel([calls(spawn("ghost", "do")), "ok"])
    agent = parent(model)
    events = await collect(agent, "go", RuntimeContext())
    result = next(e for e in events if isinstance(e, ToolResultEvent)).result
    assert result.is_error and "no sub-agent 'ghost'; available: general-purpose" in result.content
    await agent.close()


async def test_a_harness_agent_instance_runs_as_a_sub_agent() -> None:
    helper = HarnessAgent("helper", child_model("helped"), sys_prompt="Helps with things.")
    model = ScriptedModel([calls(spawn("helper", "help me")), "ok"])
    agent = parent(model, helper)
    ctx = RuntimeContext(user_id="u", session_id="s")
    await agent.call("go", ctx)
    assert model.requests[-1].messages[-2].tool_results[0].content.startswith("helped")
    messages = await helper.session_messages(RuntimeContext(user_id="u", session_id="s:helper:1"))
    assert [m.text for m in messages] == ["help me", "helped"]
    await agent.close()


async def test_general_purpose_uses_the_parents_model_and_tools() -> None:
    def answer(request):  # type: ignore[no-untyped-def]
        if "You are a sub-agent" in system_text(request):
            names = {t.name for t in request.tools}
            return "child sees lookup" if "lookup" in names else "no lookup"
        return None

    script = [calls(spawn("general-purpose", "look it up")), "parent done"]

    async def respond(request):  # type: ignore[no-untyped-def]
        found = answer(request)
        return found if found is not None else script.pop(0)

    model = ScriptedModel(responder=respond)
    agent = HarnessAgent("boss", model, tools=[lookup], capabilities=[Subagents()])
    reply = await agent.call("go", RuntimeContext())
    assert reply.text == "parent done"
    results = [m for m in model.requests[-1].messages if m.tool_results]
    assert results[-1].tool_results[0].content.startswith("child sees lookup")
    await agent.close()
