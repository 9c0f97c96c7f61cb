"""RunResult: what :meth:`HarnessAgent.call` returns.

It holds the reply message and reads like it (``result.text``, ``result.metadata``,
``result.content`` ... are the reply's), so code written against the bare reply keeps working;
besides it carries the typed ``output``, how the call ended, its usage and its ids.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

from harnessed.events import AgentEndEvent, Event, ModelCallEndEvent
from harnessed.messages import ContentBlock, Msg, Role, ToolResultBlock, ToolUseBlock
from harnessed.models.base import Usage

if TYPE_CHECKING:
    from harnessed.output.spec import OutputSpec

__all__ = ["ResultStatus", "RunResult", "collect_result", "run_blocking"]

logger = logging.getLogger(__name__)
R = TypeVar("R")

T = TypeVar("T")

ResultStatus: TypeAlias = Literal[
    "completed", "max_iters", "limit", "pending", "interrupted", "stopped"
]
"""``completed``: the answer is there (``output`` typed when an output type was asked for);
``max_iters`` / ``limit``: the call hit a limit first; ``pending``: it waits for the user's
answers (``pending`` lists the requests); ``interrupted``: stopped at a safe point, resumable;
``stopped``: a capability ended the call (its reason is in the reply)."""


@dataclass(frozen=True, slots=True)
class RunResult(Generic[T]):
    """The outcome of one call (see the module docstring)."""

    message: Msg
    """The reply (for ``pending``: the list of open requests, never stored in the history)."""
    output: T | None
    """The typed answer (``completed`` with an output type), the reply's text (``completed``
    without one), else ``None``."""
    status: ResultStatus
    usage: Usage = field(default_factory=Usage)
    """Tokens of every model request of the call (its sub-agents' included)."""
    steps: int = 0
    """Model requests of the call's own loop."""
    turn_id: str | None = None
    run_id: str = ""
    session_id: str = ""
    pending: tuple[str, ...] = ()
    """With status ``pending``: the ids of the requests to answer with ``agent.respond``."""
    cost_usd: float | None = None
    """The call's cost when every model's price is known, else ``None`` (never a guessed 0)."""
    model_requests: int = 0
    """Model requests, the sub-agents' included."""

    # ------------------------------------------------ reads like the reply
    @property
    def text(self) -> str:
        return self.message.text

    @property
    def role(self) -> Role:
        return self.message.role

    @property
    def content(self) -> tuple[ContentBlock, ...]:
        return self.message.content

    @property
    def metadata(self) -> Mapping[str, Any]:
        return self.message.metadata

    @property
    def id(self) -> str:
        return self.message.id

    @property
    def name(self) -> str | None:
        return self.message.name

    @property
    def timestamp(self) -> str:
        return self.message.timestamp

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return self.message.tool_uses

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return self.message.tool_results

    @property
    def thinking(self) -> str:
        return self.message.thinking

    def replace(self, **changes: Any) -> Msg:
        """The reply with ``changes`` (as :meth:`Msg.replace`)."""
        return self.message.replace(**changes)

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    def to_dict(self, output: Any = None) -> dict[str, Any]:
        """JSON-compatible data: ``output`` as given (the spec's dump), else as it is."""
        return {
            "status": self.status,
            "text": self.message.text,
            "output": output if output is not None else _plain(self.output),
            "message": self.message.to_dict(),
            "usage": dataclasses.asdict(self.usage),
            "cost_usd": self.cost_usd,
            "steps": self.steps,
            "model_requests": self.model_requests,
            "turn_id": self.turn_id,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "pending": list(self.pending),
        }

    def __str__(self) -> str:
        return self.message.text


def _plain(value: Any) -> Any:
    import pydantic_core

    return pydantic_core.to_jsonable_python(value)


def add_usage(total: Usage, usage: Usage | None) -> Usage:
    if usage is None:
        return total
    return Usage(
        total.input_tokens + usage.input_tokens,
        total.output_tokens + usage.output_tokens,
        total.cache_read_tokens + usage.cache_read_tokens,
        total.cache_write_tokens + usage.cache_write_tokens,
    )


_STATUSES = frozenset({"completed", "max_iters", "limit", "pending", "interrupted", "stopped"})


async def collect_result(
    events: AsyncIterator[Event], spec: OutputSpec[Any] | None
) -> RunResult[Any]:
    """Run a call's event stream to its end and sum it up (usage of every model request,
    the sub-agents' included)."""
    end: AgentEndEvent | None = None
    usage = Usage()
    requests = 0
    async for event in events:
        if isinstance(event, ModelCallEndEvent):
            usage = add_usage(usage, event.usage)
            requests += 1
        elif isinstance(event, AgentEndEvent) and event.source is None:
            end = event
    if end is None:  # pragma: no cover - a run always ends with agent_end or raises
        raise RuntimeError("agent run ended without a reply")
    output: Any = end.output
    if end.status == "completed" and spec is None:
        output = end.reply.text
    status: Any = end.status if end.status in _STATUSES else "stopped"
    return RunResult(
        message=end.reply,
        output=output,
        status=status,
        usage=usage,
        steps=end.iterations,
        turn_id=end.turn_id,
        run_id=end.run_id,
        session_id=end.session_id,
        pending=end.pending,
        model_requests=requests,
    )


def run_blocking(make: Callable[[], Coroutine[Any, Any, R]]) -> R:
    """Run the coroutine ``make()`` to its end from synchronous code. Inside a running event
    loop (a notebook) it runs on a worker thread with an event loop of its own, while this
    thread waits; the coroutine is only created where it runs."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    logger.info("called synchronously inside a running event loop: running on a worker thread")
    with concurrent.futures.ThreadPoolExecutor(1, "harnessed-call-sync") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()
