"""Plans live in the caller's own scope: one user never sees another's plan (BEHAVIOUR.md §9)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harnessed import ConfirmationRequestEvent, HarnessAgent, RuntimeContext, ToolResultEvent
from harnessed.models import ScriptedModel, ScriptedResponse
from harnessed.sandbox import BubblewrapSandbox
from harnessed.workspace import Workspace
from tests.sandbox.conftest import bwrap
from tests.sandbox.helpers import execute
from tests.support.fixtures import tool_step

__all__ = ["bwrap"]  # the fixture

ALICE = RuntimeContext("alice", "s1")
BOB = RuntimeContext("bob", "s1")
ALICE_PLAN = "agents/bot/users/alice/plans/PLAN.md"
BOB_PLAN = "agents/bot/users/bob/plans/PLAN.md"


async def steps(
    workspace: Path, sandbox: BubblewrapSandbox, ctx: RuntimeContext, *todo: ScriptedResponse
) -> tuple[list[str], list[ConfirmationRequestEvent]]:
    """One call of a fresh plan-mode agent; the tool results' texts and the approvals asked."""
    agent = HarnessAgent(
        "bot",
        ScriptedModel([*todo, "done"]),
        workspace=workspace,
        shell=sandbox,
        enable_plan_mode=True,
        max_iters=len(todo) + 1,
        memory=False,
    )
    try:
        results: list[str] = []
        asks: list[ConfirmationRequestEvent] = []
        async for event in agent.stream_events("go", ctx):
            if isinstance(event, ToolResultEvent):
                results.append(event.result.content)
            elif isinstance(event, ConfirmationRequestEvent):
                asks.append(event)  # declined from elsewhere while the run waits
                task = agent.respond(ctx, event.request_id, False)
                asyncio.get_running_loop().create_task(task)  # type: ignore[arg-type]
        return results, asks
    finally:
        await agent.close()


async def test_two_users_in_plan_mode_never_see_each_others_plans(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    alice, _ = await steps(
        tmp_path,
        bwrap,
        ALICE,
        tool_step("plan_enter"),
        tool_step("plan_write", content="alice secret"),
    )
    assert ALICE_PLAN in alice[0] and ALICE_PLAN in alice[1]
    bob, asks = await steps(
        tmp_path,
        bwrap,
        BOB,
        tool_step("plan_enter"),
        tool_step("plan_write", content="bob's plan"),
        tool_step("read_file", path=ALICE_PLAN),
        tool_step("glob_files", pattern="**/PLAN.md"),
        tool_step("grep_files", pattern="alice secret"),
        tool_step("read_file", path=BOB_PLAN),
        tool_step("plan_exit"),
    )
    assert BOB_PLAN in bob[1]
    assert "alice secret" not in "".join(bob[:4] + bob[5:])
    assert ALICE_PLAN not in bob[4] and "no match" in bob[4].lower()
    assert "another user" in bob[2]
    assert ALICE_PLAN not in bob[3] and BOB_PLAN in bob[3]
    assert "bob's plan" in bob[5]
    # the approval Bob is asked for shows his plan, not Alice's
    assert [a.details["plan"] for a in asks] == ["bob's plan"]
    assert (tmp_path / ALICE_PLAN).read_text() == "alice secret"
    assert not (tmp_path / "plans" / "PLAN.md").exists()  # nothing shared is written

    for ctx in (ALICE, BOB):  # leave plan mode to run commands
        agent = HarnessAgent("bot", ScriptedModel(), workspace=tmp_path, enable_plan_mode=True)
        await agent.exit_plan_mode(ctx)
    bob, _ = await steps(
        tmp_path,
        bwrap,
        BOB,
        execute(f"cat /workspace/{ALICE_PLAN}; grep -rs 'alice secret' /workspace; echo end"),
        execute(f"cat /workspace/{BOB_PLAN}"),
    )
    assert "alice secret" not in bob[0] and "end" in bob[0]
    assert "bob's plan" in bob[1]
    alice, _ = await steps(tmp_path, bwrap, ALICE, execute(f"cat /workspace/{ALICE_PLAN}"))
    assert "alice secret" in alice[0]  # at the path the model was told


async def test_the_global_scope_keeps_the_shared_plan_file(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path, scope="global")
    assert workspace.plan_file() == "plans/PLAN.md" == workspace.PLAN_FILE
    user = Workspace(tmp_path)
    assert user.plan_file(agent_id="bot", user_id="bob") == BOB_PLAN
    assert (
        Workspace(tmp_path, scope="session").plan_file(
            agent_id="bot", user_id="bob", session_id="s1"
        )
        == "agents/bot/users/bob/sessions/s1/plans/PLAN.md"
    )
