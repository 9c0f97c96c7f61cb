"""AskUser: the ``ask_user`` tool, through which the model asks the user a question and waits
for a (typed) answer.

The tool's own permission check asks the user, so the question parks the turn exactly as a
tool confirmation does (see :mod:`harnessed.permissions.flow`): ``stream_events`` waits for the
answer, ``call`` ends with status ``pending``. Answer with
``agent.respond(ctx, request_id, True, answer=...)`` (checked against the question's choices or
JSON schema), over HTTP, on the web page or in ``harnessed chat``; declining
(``approved=False``) tells the model the user gave no answer.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from harnessed.capabilities.base import Capability, CapabilityHost
from harnessed.messages import ToolUseBlock
from harnessed.permissions.answers import check_schema, decode_answer, question_details
from harnessed.permissions.capability import Permissions
from harnessed.permissions.gate import ApprovalGate
from harnessed.permissions.rules import PermissionDecision
from harnessed.state.agent_state import AgentState
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool

__all__ = ["ASK_USER", "AskUser"]

ASK_USER = "ask_user"

_DECLINED = (
    "The user chose not to answer this question. Go on with what you know, or ask in another "
    "way if you cannot continue without an answer."
)


class AskUser(Capability):
    """The ``ask_user`` tool (``HarnessAgent(capabilities=[AskUser()])``)."""

    name = "ask_user"

    def __init__(self) -> None:
        self.gate: ApprovalGate | None = None
        with warnings.catch_warnings():  # the argument "schema" shadows BaseModel.schema
            warnings.filterwarnings("ignore", 'Field name "schema"', UserWarning)
            self._tool = self._make_tool()

    def setup(self, host: CapabilityHost) -> None:
        permissions = host.capability(Permissions)
        if permissions is None:  # pragma: no cover - every agent has permissions
            raise ValueError("AskUser needs the Permissions capability")
        self.gate = permissions.gate
        permissions.add_answer_tool(ASK_USER)
        permissions.add_tool_check(self._tool, _ask)

    def tools(self) -> Sequence[Tool]:
        return [self._tool]

    def _make_tool(self) -> Tool:
        capability = self

        @tool(name=ASK_USER, read_only=True)
        async def ask_user(
            context: ToolContext,
            question: str,
            choices: list[str] | None = None,
            schema: dict[str, Any] | None = None,
        ) -> str:
            """Ask the user a question and wait for the answer. Use it when you cannot go on
            without a decision or a fact only the user has; do not ask what you can find out.

            Args:
                question: The question, complete and self-contained.
                choices: The possible answers, when the user should pick one.
                schema: A JSON schema the answer must match, when you need structured data.
            """
            gate = capability.gate
            answer = gate.answers.pop(context.call_id, None) if gate is not None else None
            if answer is None:
                raise ToolError("the question was not put to the user, so there is no answer")
            value = decode_answer(answer)
            if isinstance(value, str):
                return f"The user answered: {value}"
            return f"The user answered (JSON): {answer}"

        return ask_user


async def _ask(call: ToolUseBlock, state: AgentState) -> PermissionDecision | None:
    """``ask_user``'s permission check: every well-formed question is put to the user."""
    question = call.input.get("question")
    choices = call.input.get("choices")
    schema = call.input.get("schema")
    if not isinstance(question, str) or not question.strip():
        return _bad("question must be non-empty text")
    if choices is not None and (
        not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices)
    ):
        return _bad("choices must be a non-empty list of strings")
    if schema is not None:
        if not isinstance(schema, dict):
            return _bad("schema must be a JSON schema object")
        try:
            check_schema(schema)
        except ValueError as exc:
            return _bad(f"schema is {exc}")
    return PermissionDecision.ask(
        question.strip(),
        details=question_details(question.strip(), choices, schema),
        declined_message=_DECLINED,
    )


def _bad(problem: str) -> PermissionDecision:
    return PermissionDecision.deny(f"ask_user was called wrongly: {problem}")
