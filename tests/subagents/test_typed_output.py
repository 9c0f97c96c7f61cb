"""A sub-agent with an output type returns a typed value to its parent."""

from __future__ import annotations

import json

import pydantic
import pytest

from harnessed import RuntimeContext, ToolResultEvent
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.output import FINAL_TOOL
from harnessed.subagents import Subagents, SubagentSpec
from harnessed.subagents.spec import SpecError
from tests.subagents.helpers import calls, parent, spawn
from tests.support.fixtures import collect


class Review(pydantic.BaseModel):
    approved: bool
    issues: list[str]


async def test_the_childs_typed_answer_reaches_the_parent_as_json_and_on_the_record() -> None:
    child = ScriptedModel(
        [
            ScriptedResponse("I think it is fine."),  # plain text: asked for the tool
            ScriptedResponse(
                tool_calls=[ScriptedToolCall(FINAL_TOOL, {"approved": False, "issues": ["typo"]})]
            ),
        ],
        name="child",
    )
    spec = SubagentSpec(
        "reviewer",
        "Reviews a change.",
        system_prompt="You review.",
        model=child,
        output_type=Review,
    )
    model = ScriptedModel([calls(spawn("reviewer", "Review login.py")), "Noted."])
    agent = parent(model, spec)
    ctx = RuntimeContext("u", "s")
    events = await collect(agent, "Review it", ctx)
    result = next(e for e in events if isinstance(e, ToolResultEvent) and e.source is None)
    assert not result.result.is_error
    assert json.loads(result.result.content.split("\n")[0]) == {
        "approved": False,
        "issues": ["typo"],
    }
    (task,) = await agent.capability(Subagents).tasks(ctx)
    assert task.output == {"approved": False, "issues": ["typo"]}
    assert Review.model_validate(task.output) == Review(approved=False, issues=["typo"])
    assert FINAL_TOOL in {t.name for t in child.requests[0].tools}
    assert FINAL_TOOL not in {t.name for t in model.requests[0].tools}  # the parent: free text
    await agent.close()


def test_a_spec_with_an_output_type_without_a_schema_fails_naming_the_field() -> None:
    with pytest.raises(SpecError, match="output_type"):
        SubagentSpec("r", "Reviews.", output_type=object())
