"""Permission evaluation order and modes (BEHAVIOUR §6): deny → ask → tool check → allow →
bypass → default."""

from __future__ import annotations

from typing import Any

import pytest

from harnessed import tool
from harnessed.messages import ToolUseBlock
from harnessed.permissions import (
    PermissionDecision,
    PermissionMode,
    PermissionRule,
    PermissionSettings,
    evaluate,
)
from harnessed.runtime import SessionRef
from harnessed.state import AgentState
from harnessed.tools.base import Tool


@tool
def execute(command: str) -> str:
    """Run a command."""
    return command


@tool
def write_file(path: str, content: str) -> str:
    """Write a file."""
    return path


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a file."""
    return path


TOOLS = {t.name: t for t in (execute, write_file, read_file)}
STATE = AgentState.new(SessionRef("a", "u", "s"))


def call(name: str, **args: Any) -> ToolUseBlock:
    return ToolUseBlock("c1", name, args)


async def decide(
    name: str,
    mode: str | None = None,
    rules: tuple[PermissionRule, ...] = (),
    check: Any = None,
    **args: Any,
) -> PermissionDecision:
    settings = PermissionSettings(PermissionMode(mode) if mode else None, rules)
    tool_: Tool = TOOLS[name]
    return await evaluate(call(name, **args), tool_, STATE, settings, check)


async def always_ask(call: ToolUseBlock, state: AgentState) -> PermissionDecision | None:
    return PermissionDecision.ask("the tool wants a human")


async def test_without_mode_or_rules_every_tool_runs() -> None:
    for name in TOOLS:
        assert (await decide(name, command="x", path="p", content="c")).behavior == "allow"


async def test_deny_beats_allow_and_ask() -> None:
    rules = (
        PermissionRule.allow("execute"),
        PermissionRule.ask("execute"),
        PermissionRule.deny("execute", command="rm *"),
    )
    denied = await decide("execute", "bypass", rules, command="rm -rf build")
    assert denied.behavior == "deny" and "execute(command=rm *)" in denied.reason
    asked = await decide("execute", "bypass", rules, command="ls")
    assert asked.behavior == "ask"


async def test_ask_rule_beats_allow_rule_and_the_tools_own_check() -> None:
    async def allow_check(call: ToolUseBlock, state: AgentState) -> PermissionDecision:
        return PermissionDecision.allow("fine by the tool")

    rules = (PermissionRule.allow("read_file"), PermissionRule.ask("read_file", path="secret*"))
    assert (await decide("read_file", None, rules, allow_check, path="secret.txt")).behavior == (
        "ask"
    )
    assert (await decide("read_file", None, rules, allow_check, path="a.txt")).behavior == "allow"


async def test_tool_check_comes_before_allow_rules_and_bypass() -> None:
    rules = (PermissionRule.allow("*"),)
    d = await decide("execute", "bypass", rules, always_ask, command="ls")
    assert d.behavior == "ask" and d.reason == "the tool wants a human"
    # the tool's own check applies even with permissions off
    assert (await decide("execute", None, (), always_ask, command="ls")).behavior == "ask"


async def test_dont_ask_turns_every_ask_into_deny() -> None:
    by_rule = await decide("read_file", "dont_ask", (PermissionRule.ask("read_file"),), path="a")
    by_default = await decide("execute", "dont_ask", command="make")
    by_check = await decide("write_file", "dont_ask", (), always_ask, path="a", content="b")
    for d in (by_rule, by_default, by_check):
        assert d.behavior == "deny" and "dont_ask" in d.reason
    assert (await decide("read_file", "dont_ask", path="a")).behavior == "allow"


@pytest.mark.parametrize(
    ("mode", "read", "write", "run"),
    [
        ("default", "allow", "ask", "ask"),
        ("accept_edits", "allow", "allow", "ask"),
        ("explore", "allow", "deny", "deny"),
        ("bypass", "allow", "allow", "allow"),
        ("dont_ask", "allow", "deny", "deny"),
    ],
)
async def test_mode_defaults(mode: str, read: str, write: str, run: str) -> None:
    assert (await decide("read_file", mode, path="a")).behavior == read
    assert (await decide("write_file", mode, path="a", content="b")).behavior == write
    assert (await decide("execute", mode, command="make")).behavior == run


async def test_allow_rule_beats_the_mode_default() -> None:
    rules = (PermissionRule.allow("execute", command="git status*"),)
    assert (await decide("execute", "default", rules, command="git status -s")).behavior == (
        "allow"
    )
    assert (await decide("execute", "default", rules, command="git push")).behavior == "ask"
    assert (await decide("execute", "explore", rules, command="git status")).behavior == "allow"


async def test_argument_patterns_need_every_argument_to_match() -> None:
    rule = PermissionRule.deny("write_file", path="/etc/*", content="*password*")
    assert rule.matches(call("write_file", path="/etc/x", content="a password b"))
    assert not rule.matches(call("write_file", path="/etc/x", content="harmless"))
    assert not rule.matches(call("write_file", content="password"))  # argument missing
    assert PermissionRule.ask("*").matches(call("anything"))
    structured = PermissionRule.allow("t", opts='{"n": 1}')
    assert structured.matches(call("t", opts={"n": 1}))


def test_rules_round_trip_and_validate() -> None:
    rule = PermissionRule.deny("execute", command="rm *")
    assert PermissionRule.from_dict(rule.to_dict()) == rule
    with pytest.raises(ValueError, match="behavior"):
        PermissionRule("execute", "maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool"):
        PermissionRule(" ", "allow")
    with pytest.raises(ValueError, match="needs 'tool' and 'behavior'"):
        PermissionRule.from_dict({"tool": "x", "allow": True})
    with pytest.raises(ValueError, match="permission_mode must be one of default, accept_edits"):
        PermissionMode.parse("ask")


def test_session_settings_override_the_agents_mode_and_add_rules() -> None:
    agent_rules = (PermissionRule.allow("read_file"),)
    settings = PermissionSettings.resolve(
        PermissionMode.DEFAULT,
        agent_rules,
        {"mode": "bypass", "rules": [PermissionRule.deny("execute").to_dict()]},
    )
    assert settings.mode is PermissionMode.BYPASS
    assert [r.behavior for r in settings.rules] == ["deny", "allow"]
    assert not PermissionSettings.resolve(None, (), {}).active
    with pytest.raises(ValueError, match="session's permission mode"):
        PermissionSettings.resolve(None, (), {"mode": "sometimes"})
