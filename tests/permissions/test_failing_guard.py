"""An exception in the application's tool_guard (or a tool's permission check) escapes the
toolkit: the whole step is thrown away after earlier calls of the step already ran, so the
working history never learns that they ran. The toolkit promises every failure becomes an
error result for that call."""

from __future__ import annotations

from harnessed import HarnessAgent
from harnessed.models import ScriptedModel, ScriptedResponse
from tests.permissions.deployer import Deployer
from tests.support.fixtures import CTX, call


async def test_a_failing_guard_becomes_an_error_result_for_that_call() -> None:
    d = Deployer()

    async def guard(c, tool, context):
        if c.name == "status":
            raise RuntimeError("policy service unreachable")
        return None

    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[call("deploy", "c1", target="prod"), call("status", "s1")]
            ),
            "done",
        ]
    )
    agent = HarnessAgent("ops", model, tools=d.tools, tool_guard=guard)
    reply = await agent.call("ship", CTX)  # raises RuntimeError today
    assert d.deployed == ["prod"]
    state = await agent.load_state(CTX)
    results = {r.tool_use_id: r for m in state.history for r in m.tool_results}
    assert not results["c1"].is_error
    assert results["s1"].is_error and "policy service unreachable" in results["s1"].content
    assert reply.text == "done"
