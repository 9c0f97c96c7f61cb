"""Toolkit: the tools of one agent, and how one step's tool calls are executed.

Every failure becomes an error tool result that names the problem (unknown tool, arguments
that are not JSON, arguments that fail validation, an exception in the tool), so the loop
always goes on and every call gets exactly one result. Consecutive calls to concurrency-safe
tools run in parallel; results always come back in call order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from harnessed.messages import INVALID_ARGUMENTS_KEY, ToolResultBlock, ToolUseBlock
from harnessed.models.base import ToolSchema
from harnessed.tools.base import Tool, ToolError, ToolOutput, format_tool_output
from harnessed.tools.context import ToolContext

if TYPE_CHECKING:
    import pydantic

__all__ = ["Finish", "ToolGuard", "Toolkit"]

logger = logging.getLogger(__name__)


class ToolGuard(Protocol):
    """Decides, before a call runs, whether it may run (plan mode and permissions plug in here).

    Return ``None`` to allow the call, or the text of the error result that replaces it.
    """

    async def __call__(
        self, call: ToolUseBlock, tool: Tool, context: ToolContext
    ) -> str | None: ...


Finish = Callable[[ToolUseBlock, ToolResultBlock], Awaitable[ToolResultBlock]]
"""Replaces a call's result after it ran (the capabilities' ``after_tool_call`` hooks)."""


@dataclass(frozen=True, slots=True)
class _Planned:
    call: ToolUseBlock
    tool: Tool | None


class Toolkit:
    """A name → :class:`Tool` registry with step execution."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._schemas: tuple[ToolSchema, ...] | None = None
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> None:
        if not isinstance(tool, Tool):
            raise TypeError(f"expected a Tool (decorate the function with @tool), got {tool!r}")
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._schemas = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def remove(self, name: str) -> Tool | None:
        """Unregister a tool (a tool set that changes at run time, e.g. an MCP server's)."""
        self._schemas = None
        return self._tools.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> tuple[ToolSchema, ...]:
        """Every tool's schema, in registration order (the same tuple until tools change)."""
        if self._schemas is None:
            self._schemas = tuple(t.schema for t in self._tools.values())
        return self._schemas

    # ------------------------------------------------------------ execution
    async def run_step(
        self,
        calls: Sequence[ToolUseBlock],
        make_context: Callable[[ToolUseBlock], ToolContext],
        guard: ToolGuard | None = None,
        on_result: Callable[[ToolResultBlock, float], None] | None = None,
        finish: Finish | None = None,
    ) -> list[ToolResultBlock]:
        """Run one step's calls; returns one result per call, in call order.

        ``finish(call, result)`` may replace each result as it is produced (refusals and errors
        included); ``on_result(result, duration_ms)`` is then called as each call finishes (in
        completion order), so a caller can report progress while parallel calls still run.
        """
        planned = [_Planned(c, self._tools.get(c.name)) for c in calls]

        async def timed(p: _Planned) -> ToolResultBlock:
            started = time.perf_counter()
            result = await self._run_one(p, make_context, guard)
            if finish is not None:
                result = await finish(p.call, result)
            if on_result is not None:
                on_result(result, (time.perf_counter() - started) * 1000)
            return result

        results: list[ToolResultBlock] = []
        for batch in _batches(planned):
            if len(batch) == 1:
                results.append(await timed(batch[0]))
            else:
                results.extend(await asyncio.gather(*(timed(p) for p in batch)))
        return results

    async def _run_one(
        self,
        planned: _Planned,
        make_context: Callable[[ToolUseBlock], ToolContext],
        guard: ToolGuard | None,
    ) -> ToolResultBlock:
        call, tool = planned.call, planned.tool
        if tool is None:
            available = ", ".join(sorted(self._tools)) or "none"
            return _error(call, f"Unknown tool {call.name!r}. Available tools: {available}.")
        if INVALID_ARGUMENTS_KEY in call.input:
            raw = str(call.input[INVALID_ARGUMENTS_KEY])
            return _error(
                call,
                f"Invalid arguments for tool {call.name!r}: not a JSON object: {raw[:500]!r}",
            )
        context = make_context(call)
        if guard is not None:
            try:
                refusal = await guard(call, tool, context)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broken check refuses this call; the step goes on
                logger.warning("the permission check of %s raised", call.name, exc_info=True)
                return _error(
                    call,
                    f"Permission check failed: {type(exc).__name__}: {exc}. The call did not run.",
                )
            if refusal is not None:
                return _error(call, refusal)
        import pydantic  # loaded with the tool's argument model already: a lookup

        try:
            value = await tool.run(call.input, context)
        except pydantic.ValidationError as exc:
            return _error(call, f"Invalid arguments for tool {call.name!r}: {_describe(exc)}")
        except ToolError as exc:
            return _error(call, f"Error: {exc}")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.debug("tool %s raised", call.name, exc_info=True)
            return _error(call, f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}")
        images = value.images if isinstance(value, ToolOutput) else ()
        return ToolResultBlock(call.id, format_tool_output(value), name=call.name, images=images)


def _batches(planned: Sequence[_Planned]) -> Iterator[list[_Planned]]:
    """Group consecutive concurrency-safe calls; every other call runs alone."""
    batch: list[_Planned] = []
    for p in planned:
        if p.tool is not None and p.tool.concurrency_safe:
            batch.append(p)
            continue
        if batch:
            yield batch
            batch = []
        yield [p]
    if batch:
        yield batch


def _error(call: ToolUseBlock, text: str) -> ToolResultBlock:
    return ToolResultBlock(call.id, text, is_error=True, name=call.name)


def _describe(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err.get("loc", ())) or "arguments"
        message = err.get("msg", "invalid")
        if err.get("type") == "missing":
            message = "required argument is missing"
        elif err.get("type") == "extra_forbidden":
            message = "unexpected argument"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
