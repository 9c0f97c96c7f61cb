"""session_search returns the agent's own earlier session_search calls and results."""

from __future__ import annotations

from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall


async def test_a_repeated_search_still_finds_the_real_message(tmp_path: Path) -> None:
    def respond(request: ModelRequest) -> ScriptedResponse:
        if request.purpose == "summary":
            return ScriptedResponse("NOTHING")
        last = request.messages[-1]
        if last.role == "tool":
            return ScriptedResponse("done")
        if "launch code" in last.text and "?" in last.text:
            return ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("session_search", {"query": "OSPREY", "max_results": 1})
                ]
            )
        return ScriptedResponse("Noted.")

    model = ScriptedModel(responder=respond)
    agent = HarnessAgent("a", model, workspace=tmp_path, memory=False)
    await agent.call("Please remember: the launch code is OSPREY.", RuntimeContext("u", "s1"))
    await agent.call("What was the launch code?", RuntimeContext("u", "s2"))
    await agent.call("Once more: what was the launch code?", RuntimeContext("u", "s2"))
    await agent.close()

    reasoning = [r for r in model.requests if r.purpose == "reasoning"]
    results = [r for m in reasoning[-1].messages for r in m.tool_results]
    first, second = results[0], results[-1]
    assert "\n- s1#" in first.content, first.content
    # the second, identical search must find the same message, not the first search's own
    # call or its echoed result in s2
    assert "\n- s1#" in second.content, second.content
