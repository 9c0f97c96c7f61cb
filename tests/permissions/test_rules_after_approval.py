"""A stored approval of a parked call is honoured before any rule is evaluated, so a deny rule
(or explore / dont_ask mode) set by the application before the step resumes does not win."""

from __future__ import annotations

from harnessed import HarnessAgent
from harnessed.models import ScriptedModel, ScriptedResponse
from harnessed.permissions import PermissionRule
from tests.permissions.deployer import Deployer
from tests.support.fixtures import CTX, call


async def test_deny_rule_set_before_resume_wins_over_earlier_approval() -> None:
    d = Deployer()
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("deploy", "c1", target="prod")]), "ok"]
    )
    agent = HarnessAgent("ops", model, tools=d.tools, permission_mode="default")
    await agent.call("ship", CTX)
    [request] = await agent.pending_confirmations(CTX)
    await agent.respond(CTX, request.request_id, True)
    # an incident: the operator freezes deploys for this session before the agent continues
    await agent.set_permission_rules(CTX, [PermissionRule.deny("deploy")])
    await agent.call(None, CTX)
    assert d.deployed == [], "deny rule did not win over a stored approval"


async def test_explore_mode_set_before_resume_wins_over_earlier_approval() -> None:
    d = Deployer()
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("deploy", "c1", target="prod")]), "ok"]
    )
    agent = HarnessAgent("ops", model, tools=d.tools, permission_mode="default")
    await agent.call("ship", CTX)
    [request] = await agent.pending_confirmations(CTX)
    await agent.respond(CTX, request.request_id, True)
    await agent.set_permission_mode(CTX, "explore")  # read-only from now on
    await agent.call(None, CTX)
    assert d.deployed == [], "explore mode did not stop a call approved earlier"
