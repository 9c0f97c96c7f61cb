"""Permission grants (a skill's allowed-tools): allow only, never switch permissions on."""

from __future__ import annotations

from harnessed.messages import ToolUseBlock
from harnessed.permissions import PERMISSIONS, PermissionRule
from harnessed.permissions.policy import PermissionSettings, evaluate
from harnessed.runtime import SessionRef
from harnessed.skills import grants_for
from harnessed.state import AgentState
from harnessed.tools import tool


@tool
def execute(command: str) -> str:
    """Run a command."""
    return command


def state_with(grants: list[PermissionRule], **permissions: object) -> AgentState:
    state = AgentState.new(SessionRef("a", "u", "s"))
    state.put(PERMISSIONS, {**permissions, "grants": [g.to_dict() for g in grants]})
    return state


async def decide(command: str, state: AgentState, rules: tuple[PermissionRule, ...] = ()) -> str:
    settings = PermissionSettings.resolve(None, rules, state.get(PERMISSIONS))
    call = ToolUseBlock("c1", "execute", {"command": command})
    return (await evaluate(call, execute, state, settings)).behavior


def test_allowed_tools_entries_map_to_rules() -> None:
    rules = grants_for(["Bash(git:*)", "Read", "Bash(npm run test)", "my_tool", "Weird(x)"])
    described = [r.describe() for r in rules]
    assert described == [
        "execute(command=git)",
        "execute(command=git *)",
        "read_file",
        "execute(command=npm run test)",
        "my_tool",
    ]


async def test_grants_alone_do_not_turn_permissions_on() -> None:
    state = state_with(grants_for(["Bash(git:*)"]))
    assert not PermissionSettings.resolve(None, (), state.get(PERMISSIONS)).active
    assert await decide("rm -rf /tmp/x", state) == "allow"  # permissions off: as before


async def test_grants_pre_approve_but_deny_and_ask_rules_win() -> None:
    state = state_with(grants_for(["Bash(git:*)"]), mode="default")
    assert await decide("git status", state) == "allow"
    assert await decide("gitk", state) == "ask"  # "git:*" is git or git + arguments
    assert await decide("ls", state) == "ask"
    deny = (PermissionRule.deny("execute", command="git push*"),)
    assert await decide("git push origin", state, deny) == "deny"
    ask = (PermissionRule.ask("execute", command="git reset*"),)
    assert await decide("git reset --hard", state, ask) == "ask"


def test_grants_may_only_allow() -> None:
    state = AgentState.new(SessionRef("a", "u", "s"))
    state.put(PERMISSIONS, {"grants": [{"tool": "execute", "behavior": "deny"}]})
    try:
        PermissionSettings.resolve(None, (), state.get(PERMISSIONS))
    except ValueError as exc:
        assert "only allow" in str(exc)
    else:
        raise AssertionError("a deny grant was accepted")
