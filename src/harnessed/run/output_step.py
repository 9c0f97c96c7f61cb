"""The typed final answer: shaping the request for it, and checking the answer.

With an output type (:class:`~harnessed.output.OutputSpec`) a model with native structured
output gets the schema with every request (:class:`~harnessed.models.base.OutputFormat`) and
its final text must be the JSON; any other model gets a ``final_result`` tool whose arguments
are the answer. An answer that does not validate goes back to the model with the errors (a
user message, or the tool's error result) until ``retries`` are used up; then the call fails
with :class:`~harnessed.output.OutputValidationError`. A refusal the provider reports ends the
call with :class:`~harnessed.output.OutputRefusedError` (asking again would not help).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from harnessed.events import AgentEndEvent, RunStatus
from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock
from harnessed.models.base import (
    ModelRequest,
    OutputFormat,
    ToolSchema,
    structured_output_of,
)
from harnessed.output.spec import (
    FINAL_TOOL,
    OutputRefusedError,
    OutputValidationError,
    invalid_errors,
)
from harnessed.run.base import RunBase
from harnessed.run.deps import result_msg

__all__ = ["OutputSteps", "final_alone"]

_ACCEPTED = "The final answer was received."
_ALONE = (
    f"Not accepted: call {FINAL_TOOL} on its own, after the results of your other tool calls "
    "are in."
)


def final_alone(call: ToolUseBlock) -> ToolResultBlock:
    """The result of a ``final_result`` call that came with other tool calls (not taken)."""
    return ToolResultBlock(call.id, _ALONE, is_error=True, name=call.name)


class OutputSteps(RunBase):
    """The final-answer part of a run (see the module docstring)."""

    output_attempts: int = 0

    async def _finish(
        self, reply: Msg, status: RunStatus, iterations: int, output: Any = None
    ) -> AgentEndEvent:
        raise NotImplementedError  # AgentRun's

    @property
    def _native(self) -> bool:
        return structured_output_of(self.agent.model) == "native"

    def _shape(self, request: ModelRequest) -> ModelRequest:
        """``request`` with the schema of the final answer (or the final-answer tool)."""
        spec = self.output
        if spec is None or request.purpose != "reasoning":
            return request
        if self._native:
            fmt = OutputFormat(spec.name, spec.model_schema, spec.strict, spec.description)
            return dataclasses.replace(request, output=fmt)
        if any(t.name == FINAL_TOOL for t in request.tools):
            return request
        tool = ToolSchema(
            FINAL_TOOL,
            (
                "Give your final answer by calling this tool once you are done; its arguments "
                f"are the answer ({spec.name}). Do not answer in plain text. "
                f"{spec.description}"
            ).strip(),
            spec.schema,
        )
        return dataclasses.replace(request, tools=(*request.tools, tool))

    async def _answer(
        self, message: Msg, stop_reason: str | None, iterations: int
    ) -> AgentEndEvent | bool:
        """Check a final answer: the end of the call, ``True`` (it was sent back to the model:
        go on) or ``False`` (not a final answer: run its tool calls)."""
        spec = self.output
        assert spec is not None
        calls = message.tool_uses
        refusal = message.metadata.get("refusal")
        if stop_reason == "refusal" or refusal:
            text = str(refusal or message.text or "the model refused to answer")
            self._add_messages([message])
            await self._commit_step()
            raise OutputRefusedError(f"the model refused to give the answer: {text}", refusal=text)
        if self._native or not calls:
            if calls:
                return False
            if not self._native:
                return await self._again(
                    message,
                    [],
                    f"You answered in plain text; call the {FINAL_TOOL} tool with your answer.",
                )
            try:
                value = spec.parse_text(message.text)
            except Exception as exc:
                errors = invalid_errors(exc)
                if errors is None:
                    raise
                return await self._again(message, [], errors)
            data = spec.dump(value)
            reply = message.replace(metadata={**message.metadata, "output": data})
            return await self._finish(reply, "completed", iterations, output=value)
        if any(c.name != FINAL_TOOL for c in calls):
            return False
        first = calls[0]
        try:
            value = spec.parse_data(dict(first.input))
        except Exception as exc:
            errors = invalid_errors(exc)
            if errors is None:
                raise
            return await self._again(message, calls, errors)
        results = [
            ToolResultBlock(c.id, _ACCEPTED if c is first else _ALONE, c is not first, c.name)
            for c in calls
        ]
        self._add_messages([message, *(result_msg(r) for r in results)])
        data = spec.dump(value)
        reply = Msg.assistant(
            json.dumps(data, ensure_ascii=False),
            metadata={"harness": "output", "output": data, "model": self.agent.model.name},
        )
        return await self._finish(reply, "completed", iterations, output=value)

    async def _again(self, message: Msg, calls: list[ToolUseBlock], errors: str) -> bool:
        """Send an invalid answer back with its errors (or fail once retries are used up)."""
        spec = self.output
        assert spec is not None
        self.output_attempts += 1
        text = f"Your final answer does not match the required schema ({spec.name}): {errors}. " + (
            f"Call {FINAL_TOOL} again with a corrected answer."
            if calls
            else "Answer again with a corrected answer."
        )
        follow: list[Msg] = (
            [result_msg(ToolResultBlock(c.id, text, True, c.name)) for c in calls]
            if calls
            else [Msg.user(text, metadata={"harness": "output_retry"})]
        )
        self._add_messages([message, *follow])
        self.emit(
            "output_retry",
            {"attempt": self.output_attempts, "max_retries": spec.retries, "errors": errors},
        )
        await self._commit_step()
        if self.output_attempts > spec.retries:
            raise OutputValidationError(
                f"the model's final answer did not match {spec.name} after "
                f"{self.output_attempts} attempts: {errors}",
                errors=errors,
                attempts=self.output_attempts,
            )
        return True

    def _output_value(self, data: Any) -> Any:
        spec = self.output
        return data if spec is None else spec.load(data)
