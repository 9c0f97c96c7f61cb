"""Building a sub-agent from its declaration, and running one task on it.

A :class:`SubagentSpec` becomes a :class:`~harnessed.HarnessAgent` that shares the parent's
stores (its session log and state live beside the parent's, under the parent's agent name) and
takes the parent's tools — all of them, or the spec's allowlist. With ``workspace: isolated``
it gets a private scratch workspace per sub-agent session instead, with its own file (and,
when the parent has one, shell) tools. A ``HarnessAgent`` declared directly runs as it is.

Every child carries :class:`ChildLink`: at each safe point it checks whether the parent asked
the task to stop (``task_cancel``) and ends the call there, so a cancelled child never leaves
half a step behind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harnessed.capabilities.base import CallContext, Capability
from harnessed.events import (
    AgentEndEvent,
    ConfirmationRequestEvent,
    CustomEvent,
    Event,
    ModelCallEndEvent,
)
from harnessed.messages import Msg
from harnessed.models.base import Model
from harnessed.permissions.flow import ConfirmationMode
from harnessed.permissions.forwarded import Relay
from harnessed.runtime import RuntimeContext
from harnessed.subagents.spec import SubagentSpec
from harnessed.tools.base import Tool
from harnessed.workspace.layout import Workspace
from harnessed.workspace.memory import MemoryFilesystem
from harnessed.workspace.paths import encode_part

if TYPE_CHECKING:
    from harnessed.subagents.delegate import Delegate

__all__ = ["LINK_KEY", "ChildLink", "ChildOutcome", "ChildRun", "build_child", "run_child"]

LINK_KEY = "harnessed.subagent"
"""The key of :class:`ChildRun` in a sub-agent call's ``RuntimeContext.extras``."""

WORKSPACE_TOOLS = frozenset(
    {"read_file", "write_file", "edit_file", "grep_files", "glob_files", "list_files", "execute"}
)
"""Tools bound to a workspace: an isolated sub-agent gets its own instead of the parent's."""


@dataclass(slots=True)
class ChildRun:
    """What links one running sub-agent call to its parent (kept in the call's extras)."""

    task_id: str
    depth: int
    """1 for a sub-agent of a top-level agent."""
    path: str
    """The source tag of its events in the top-level stream (``reviewer:1``,
    ``reviewer:1/general-purpose:2`` ...)."""
    cancel_reason: str | None = None

    def cancel(self, reason: str) -> None:
        self.cancel_reason = reason


def link_of(runtime: RuntimeContext) -> ChildRun | None:
    found = runtime.extras.get(LINK_KEY)
    return found if isinstance(found, ChildRun) else None


class ChildLink(Capability):
    """Stops a sub-agent's call at its next safe point once its task was cancelled."""

    name = "subagent_link"

    async def before_model_request(self, call: CallContext) -> None:
        link = link_of(call.runtime)
        if link is not None and link.cancel_reason is not None:
            call.request_stop(link.cancel_reason)


@dataclass(slots=True)
class ChildOutcome:
    """How one task on a sub-agent ended."""

    status: str
    """``COMPLETED``, ``FAILED`` or ``CANCELLED``."""
    result: str | None = None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    reply: Msg | None = None
    output: Any = None
    """A typed answer as JSON data (a sub-agent with an output type)."""


@dataclass(slots=True)
class _Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    seen: set[str] = field(default_factory=set)


async def run_child(
    agent: Delegate,
    ctx: RuntimeContext,
    message: str | None,
    forward: Callable[[Event], None],
    *,
    approvals: str = "fail",
    routes: Routes | None = None,
) -> ChildOutcome:
    """Run one task (``message``; ``None`` continues the session) and report how it ended.

    Every event is passed to ``forward`` (tagged by the caller); the token usage of the child
    and of its own sub-agents is added up. Failures are reported, never raised, except
    cancellation of the surrounding task. A request for approval or a question of the child
    (or of its own sub-agents) is, per ``approvals``: forwarded (registered in ``routes``,
    answered by the parent's ``respond``), declined at once (``deny``), or the end of the
    task (``fail``).
    """
    usage = _Usage()
    end: AgentEndEvent | None = None
    mode: ConfirmationMode = "park" if approvals == "fail" else "wait"
    opened: list[str] = []
    try:
        async for event in agent.stream_events(message, ctx, confirmations=mode):
            if isinstance(event, ModelCallEndEvent) and event.usage is not None:
                usage.input_tokens += event.usage.input_tokens
                usage.output_tokens += event.usage.output_tokens
            if isinstance(event, AgentEndEvent) and event.source is None:
                end = event
            if isinstance(event, ConfirmationRequestEvent) and approvals == "deny":
                forward(event)
                await agent.respond(ctx, event.request_id, False, feedback=_UNATTENDED)
                continue
            if isinstance(event, ConfirmationRequestEvent) and routes is not None:
                opened.append(event.request_id)
                routes.add(event, _relay(agent, ctx, event.request_id))
            forward(event)
    except Exception as exc:
        return ChildOutcome(
            "FAILED",
            error=f"{type(exc).__name__}: {exc}",
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )
    finally:
        if routes is not None:
            for request_id in opened:
                await routes.discard(request_id)
    outcome = _ending(end, link_of(ctx))
    outcome.input_tokens, outcome.output_tokens = usage.input_tokens, usage.output_tokens
    return outcome


_UNATTENDED = "Nobody attends this sub-agent (its on_approval policy is deny), so it was declined."


class Routes(Protocol):
    """Where a child's requests are registered for the parent's ``respond``."""

    def add(self, event: ConfirmationRequestEvent, relay: Relay) -> None: ...

    async def discard(self, request_id: str) -> None:
        """The child stopped waiting for it (answered, or its task ended)."""
        ...


def _relay(agent: Delegate, ctx: RuntimeContext, request_id: str) -> Relay:
    async def relay(approved: bool, feedback: str | None, answer: Any) -> None:
        await agent.respond(ctx, request_id, approved, feedback=feedback, answer=answer)

    return relay


def _ending(end: AgentEndEvent | None, link: ChildRun | None) -> ChildOutcome:
    if end is None:  # pragma: no cover - a stream always ends with agent_end or raises
        return ChildOutcome("FAILED", error="the sub-agent ended without a reply")
    text = end.reply.text.strip()
    if end.status == "completed":
        output = end.reply.metadata.get("output") if end.output is not None else None
        return ChildOutcome("COMPLETED", result=text, reply=end.reply, output=output)
    if end.status == "stopped":
        reason = link.cancel_reason if link is not None else None
        return ChildOutcome("CANCELLED", error=reason or text, reply=end.reply)
    if end.status == "pending":
        return ChildOutcome(
            "FAILED",
            error=(
                "the sub-agent stopped because a tool call needs the user's approval, which a "
                f"sub-agent cannot ask for ({text})"
            ),
            reply=end.reply,
        )
    return ChildOutcome(
        "FAILED", error=f"the sub-agent stopped with status {end.status!r}: {text}", reply=end.reply
    )


def parent_tools(parent: Delegate, spec: SubagentSpec, own: frozenset[str]) -> list[Tool]:
    """The parent's tools a sub-agent of ``spec`` gets (its allowlist, without the sub-agent
    tools, which it has from its own capability). Raises ``ValueError`` for an allowlisted
    name the parent does not have."""
    available = {t.name: t for t in parent.toolkit if t.name not in own}
    if spec.tools is None:
        return list(available.values())
    missing = [name for name in spec.tools if name not in available and name not in own]
    if missing:
        raise ValueError(
            f"sub-agent {spec.id!r} ({spec.source}) allows tools the parent agent does not have: "
            f"{', '.join(missing)}; the parent has {', '.join(sorted(available)) or 'none'}"
        )
    return [available[name] for name in spec.tools if name in available]


NOT_INHERITED: dict[str, Any] = {
    "runtime": None,
    "prepare": None,
    "usage_limits": None,
    "session_usage_limits": None,
    "prices": None,
}
"""The parent's arguments a sub-agent does not take: its runs are in this process, prepared by
its own compiler, under the parent's limits (its usage counts toward the parent's call), priced
with its own table."""


def build_child(
    parent: Delegate,
    spec: SubagentSpec,
    tools: Sequence[Tool],
    capabilities: Sequence[Capability],
    *,
    model: Model,
    isolated_root: str | Path | None = None,
) -> Delegate:
    """A :class:`HarnessAgent` for ``spec``: the parent's stores and (allowed) tools."""
    workspace: Workspace | None = parent.workspace
    own_tools = list(tools)
    has_shell = any(t.name == "execute" for t in own_tools)
    wants_files = spec.tools is None or any(n in WORKSPACE_TOOLS for n in spec.tools)
    if spec.workspace == "isolated":
        own_tools = [t for t in own_tools if t.name not in WORKSPACE_TOOLS]
        root: Any = isolated_root if isolated_root is not None else MemoryFilesystem()
        workspace = Workspace(root)
    isolated = spec.workspace == "isolated"
    return parent.clone(
        features=False,  # the parent's load_skill and web_fetch come with its tools when allowed
        shared_stores=True,
        model=model,
        sys_prompt=spec.system_prompt,
        tools=own_tools,
        capabilities=[ChildLink(), *capabilities],
        workspace=workspace,
        file_tools=isolated and wants_files,
        shell=isolated and has_shell and workspace is not None and workspace.local_root is not None,
        max_iters=spec.max_iters or parent.max_iters,
        output_type=spec.output_type,
        **NOT_INHERITED,
    )


def isolated_dir(parent: Delegate, user_id: str, child_session: str) -> Path | None:
    """Where the private workspace of an isolated sub-agent session lives (``None``: memory)."""
    ws = parent.workspace
    if ws is None or ws.data_root is None:
        return None
    return (
        ws.data_root
        / ".harnessed"
        / "subagent-workspaces"
        / encode_part(parent.name, "agent name")
        / encode_part(user_id, "user id")
        / encode_part(child_session, "session id")
    )


def tagged(event: Event, path: str, *, answerable: bool = False) -> Event:
    """``event`` as the parent's stream shows it: ``source`` names the sub-agent (nested
    sub-agents' events keep their own path below it). A sub-agent's confirmation request that
    the parent can answer (``answerable``: forwarded) stays one, with its source; otherwise it
    becomes a ``subagent_needs_approval`` custom event: nobody can answer it (the sub-agent's
    task ended when it asked), and the parent's application must not take it for its own."""
    source = path if event.source is None else f"{path}/{event.source}"
    if isinstance(event, ConfirmationRequestEvent) and not answerable:
        return CustomEvent(
            name="subagent_needs_approval",
            data={"tool": event.call.name, "reason": event.reason},
            run_id=event.run_id,
            session_id=event.session_id,
            source=source,
        )
    return dataclasses.replace(event, source=source)
