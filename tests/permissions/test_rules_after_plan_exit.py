"""A call that plan mode blocked at review time is never checked against permissions; if an
earlier call of the same step (plan_exit) leaves plan mode, it runs with no rule applied."""

from __future__ import annotations

from harnessed import HarnessAgent
from harnessed.events import ConfirmationRequestEvent
from harnessed.models import ScriptedModel, ScriptedResponse
from harnessed.permissions import PermissionRule
from tests.permissions.deployer import Deployer
from tests.support.fixtures import CTX, call


async def _run(tmp_path, **kw):
    d = Deployer()
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[call("plan_exit", "p1"), call("deploy", "d1", target="prod")]
            ),
            "done",
        ]
    )
    agent = HarnessAgent(
        "ops",
        model,
        tools=d.tools,
        workspace=tmp_path,
        enable_plan_mode=True,
        shell=False,
        memory=False,
        **kw,
    )
    await agent.enter_plan_mode(CTX)
    plan = tmp_path / "agents/ops/users/u/plans/PLAN.md"  # the caller's own plan
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text("1. deploy\n")
    asked = []
    async for event in agent.stream_events("go", CTX):
        if isinstance(event, ConfirmationRequestEvent):
            asked.append(event.call.name)
            await agent.respond(CTX, event.request_id, True)  # the user approves the PLAN only
    return d, asked


async def test_deny_rule_wins_after_plan_exit_in_same_step(tmp_path) -> None:
    d, asked = await _run(tmp_path, permission_rules=[PermissionRule.deny("deploy")])
    assert asked == ["plan_exit"]
    assert d.deployed == [], "a deny rule for 'deploy' was bypassed"


async def test_default_mode_still_asks_after_plan_exit_in_same_step(tmp_path) -> None:
    d, asked = await _run(tmp_path, permission_mode="default")
    # deploy is not read-only: default mode must ask before it runs (or refuse it this step)
    assert d.deployed == [] or "deploy" in asked, "deploy ran without the user's approval"
