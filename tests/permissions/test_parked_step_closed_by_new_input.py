"""New input closes a parked step: the "not run" results and the 'cancelled' record are written
to the session log at once, but the state is only saved after the next step. If that step fails
(model error), the stored state still holds the parked step; the next call resumes it and the
tool runs — the log now has two results for one call, and the user's new message is gone from
the working history."""

from __future__ import annotations

import pytest

from harnessed import HarnessAgent
from harnessed.models import ScriptedModel, ScriptedResponse
from harnessed.models.errors import ModelError
from tests.permissions.deployer import Deployer
from tests.support.fixtures import CTX, call


async def test_closed_parked_step_stays_closed_after_a_failed_model_call() -> None:
    d = Deployer()
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("deploy", "c1", target="prod")]),
            ModelError("provider 503"),  # the step after the new input fails
            "resumed",
        ]
    )
    agent = HarnessAgent("ops", model, tools=d.tools, permission_mode="default")
    await agent.call("ship", CTX)  # parks, asks for deploy
    [request] = await agent.pending_confirmations(CTX)
    await agent.respond(CTX, request.request_id, True)  # user approved ...
    with pytest.raises(ModelError):
        await agent.call("actually, don't deploy", CTX)  # ... then changed their mind
    # the log already says the call did not run and the step was cancelled
    msgs = await agent.session_messages(CTX)
    not_run = [r for m in msgs for r in m.tool_results if r.tool_use_id == "c1"]
    assert len(not_run) == 1 and "did not run" in not_run[0].content

    # the state must agree with the log: no parked step any more
    assert await agent.pending_confirmations(CTX) == []
    await agent.call(None, CTX)
    assert d.deployed == [], "a step the log records as cancelled ran anyway"
    msgs = await agent.session_messages(CTX)
    results = [r for m in msgs for r in m.tool_results if r.tool_use_id == "c1"]
    assert len(results) == 1, f"two results for one call in the session log: {results}"
