"""The capability seam: how a subsystem plugs into a :class:`~harnessed.HarnessAgent`.

A *capability* is an object with a handful of optional methods. The agent is the loop and the
context compiler; everything else — the task list, plan mode, permissions, memory, the file and
shell tools, a sandbox, skills, sub-agents, and the application's own extensions — is a
capability passed as ``HarnessAgent(..., capabilities=[...])``. Subclass :class:`Capability`
and override only what you need: a method that is not overridden is never called (the agent
finds the overridden hooks once, when it is built), so an unused hook costs nothing per request.

When the agent calls what (capabilities in the order they were given; "reverse" = last first):

At construction:
    1. :meth:`Capability.setup` of every capability, in order, with the
       :class:`CapabilityHost` (agent name, model, workspace, stores, state access, the other
       capabilities, their read-only views: :meth:`CapabilityHost.query`). The agent's order:
       permissions (always first), the built-ins its keywords ask for, plan status and task
       contract, then the application's capabilities.
    2. From each capability, in order: :meth:`~Capability.tools`,
       :meth:`~Capability.instructions`, :meth:`~Capability.context_sources`,
       :meth:`~Capability.history_views` — what it contributes for the agent's whole life. An
       application tool with the same name as a capability's tool wins (the capability's tool
       is left out); two capabilities giving one tool name is an error.

Per call (``agent.call`` / ``stream_events``, under the session lock):
    3. the session's state is loaded;
    4. :meth:`~Capability.before_call` (in order) — the input is already in the state;
    5. per step:
       a. :meth:`~Capability.before_model_request` (in order) — a *safe point*: nothing is in
          flight, the capability may add messages (:meth:`CallContext.add_messages`, e.g. a
          steering message) or ask the call to stop (:meth:`CallContext.request_stop`);
       b. at the call's first request only: :meth:`~Capability.call_instructions` (in order)
          — instructions that depend on the caller, kept for the whole call and given to the
          preparer as ``PrepareInfo.instructions`` (the compiler puts them in the system
          message after the agent's own);
       c. :meth:`~Capability.filter_tools` (in order, each given what the one before left) —
          which of the agent's tools this request offers (a tool with nothing to act on for
          this caller, or one a policy forbids here, is left out);
       d. the request is prepared by the compiler; :meth:`~Capability.state_blocks` (in
          order) give the ``TASK_STATE`` / ``RUNTIME_STATE`` texts and the history views
          rewrite how the history is shown;
       e. the model is called; :meth:`~Capability.after_model_request` (reverse) sees the
          prepared request and the response — or the error;
       f. permissions review the step's tool calls (asking the user when needed); then for
          each call :meth:`~Capability.before_tool_call` (in order; the first refusal wins —
          plan mode's refusal comes from the built-in plan status, before the application's
          capabilities), the step's permission verdict, the application's ``tool_guard``, the
          tool runs, :meth:`~Capability.after_tool_call` (reverse; may replace the result);
       g. the step is committed: the session log gets the step's records and the state is saved
          (one place in the loop); a stop requested meanwhile ends the call at the next safe
          point, before another model request;
    6. :meth:`~Capability.after_call` (reverse) with how the call ended (also on failure).
    :meth:`~Capability.on_event` sees every event the call yields, as it is yielded.

At ``agent.close()``: :meth:`~Capability.close` (reverse).

A capability object belongs to one agent and is shared by all its sessions, which run
concurrently: keep per-session data in the state — untyped JSON data with
:meth:`Capability.section` / :meth:`Capability.set_section`, or typed with a
:class:`~harnessed.state.StateSection` key (``state.get(KEY)`` / ``state.put(KEY, value)``, as
the built-in features do) — or keyed by session, never in plain attributes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from harnessed.capabilities.hooks import HistoryView
from harnessed.capabilities.materials import Material
from harnessed.capabilities.seam import RequestPreparer
from harnessed.capabilities.sources import SourceRegistration
from harnessed.capabilities.state_blocks import StateBlock
from harnessed.events import Event
from harnessed.log.store import SessionLogStore
from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock
from harnessed.models.base import Model, ModelRequest, ModelResponse, ToolSchema
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.state.editor import Change
from harnessed.state.store import AgentStateStore
from harnessed.tokens import TokenEstimator
from harnessed.tools.base import Tool
from harnessed.tools.toolkit import Toolkit
from harnessed.workspace.layout import Workspace

if TYPE_CHECKING:
    from harnessed.events import RunStatus

__all__ = [
    "HOOKS",
    "CallContext",
    "CallEnd",
    "Capability",
    "CapabilityHost",
    "ModelCall",
    "SourceSpec",
    "StateBlock",
    "check_name",
    "overrides",
]

C = TypeVar("C", bound="Capability")
V = TypeVar("V")

HOOKS = (
    "call_instructions",
    "filter_tools",
    "state_blocks",
    "before_call",
    "after_call",
    "before_model_request",
    "after_model_request",
    "before_tool_call",
    "after_tool_call",
    "on_event",
    "close",
)
"""The per-call methods; the agent calls each one only on capabilities that override it."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


# --------------------------------------------------------------------------- data passed in
SourceSpec = SourceRegistration
"""A dynamic context source a capability registers: ``SourceSpec(id, source, timeout=5.0,
on_failure=SourceFailurePolicy.FAIL)`` — the arguments of ``agent.add_context_source``."""


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model request of a call, as :meth:`Capability.after_model_request` sees it."""

    model_call_id: str
    iteration: int
    """1 for the first request of the call."""
    request: ModelRequest
    """The prepared request that was sent."""
    response: ModelResponse | None = None
    """The model's response, or ``None`` when the request failed (see ``error``)."""
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class CallEnd:
    """How a call ended, as :meth:`Capability.after_call` sees it."""

    status: RunStatus | Literal["closed"]
    """``completed``, ``max_iters``, ``pending`` (waiting for confirmations), ``stopped`` (a
    capability asked the call to stop), ``error``, ``cancelled`` or ``closed`` (the consumer
    stopped reading the stream)."""
    reply: Msg | None = None
    iterations: int = 0
    error: BaseException | None = None


class CapabilityHost(Protocol):
    """What a capability can reach when it is set up (the agent implements this).

    Everything here is shared by every session of the agent. Use ``read_state`` /
    ``change_state`` from *application-facing* methods of a capability (outside a call);
    inside a call use :attr:`CallContext.state`.
    """

    @property
    def agent_name(self) -> str: ...

    @property
    def model(self) -> Model: ...

    @property
    def workspace(self) -> Workspace | None: ...

    @property
    def session_store(self) -> SessionLogStore: ...

    @property
    def state_store(self) -> AgentStateStore: ...

    @property
    def estimator(self) -> TokenEstimator:
        """The token estimator the compiler measures requests with."""
        ...

    @property
    def preparer(self) -> RequestPreparer:
        """The request preparer (the context compiler), for auxiliary model requests."""
        ...

    async def read_state(self, ctx: RuntimeContext | None) -> AgentState:
        """A session's state as last saved (a fresh one for a new session)."""
        ...

    async def change_state(self, ctx: RuntimeContext | None, change: Change) -> AgentState:
        """Change a session's stored state under its lock (waits for a running call of that
        session): ``change`` edits the state in place and returns the session-log records to
        append (``None`` = nothing changed, nothing saved)."""
        ...

    def capability(self, kind: type[C]) -> C | None:
        """The agent's first capability of type ``kind`` (or ``None``)."""
        ...

    def query(self, view: type[V]) -> V | None:
        """The first read-only view of type ``view`` another capability answers with (see
        :mod:`harnessed.capabilities.queries`), or ``None``: how a capability asks another
        one at setup instead of reaching into it."""
        ...

    def tool(self, name: str) -> Tool | None:
        """The agent's tool called ``name`` — complete only once the agent is built, so ask
        from hooks and tool checks, not in ``setup``."""
        ...

    @property
    def toolkit(self) -> Toolkit:
        """The agent's tools. Only for a capability whose tools change while the agent runs
        (an MCP server's tools are known at the first call and change when the server says
        so): it adds and removes its *own* tools here, from its hooks. Every other capability
        gives its tools through :meth:`Capability.tools`."""
        ...


class CallContext:
    """What a capability sees of one running call (created by the loop for each call)."""

    __slots__ = (
        "_add",
        "_emit",
        "_publish",
        "_record",
        "agent_name",
        "run_id",
        "runtime",
        "state",
        "stop_reason",
        "values",
    )

    def __init__(
        self,
        *,
        agent_name: str,
        runtime: RuntimeContext,
        run_id: str,
        state: AgentState,
        emit: Callable[[str, Mapping[str, Any]], None],
        record: Callable[[str, Mapping[str, Any]], None],
        publish: Callable[[Event], None],
        add_messages: Callable[[Sequence[Msg]], None],
    ) -> None:
        self.agent_name = agent_name
        self.runtime = runtime
        """Identity of the call: user, session, run (``runtime.user_id``, ``runtime.session``)."""
        self.run_id = run_id
        self.state = state
        """The session's live working state (changes are saved when the step commits)."""
        self.values: MutableMapping[str, Any] = {}
        """Scratch space for this call only; key it with your capability's name."""
        self.stop_reason: str | None = None
        self._emit = emit
        self._record = record
        self._publish = publish
        self._add = add_messages

    @property
    def user_id(self) -> str:
        return self.runtime.user_id

    @property
    def session_id(self) -> str:
        return self.runtime.session

    def emit(self, name: str, data: Mapping[str, Any]) -> None:
        """Send a custom event to the stream; it is also written to the session log (as a
        ``custom`` record, with the step that is being committed)."""
        self._emit(name, data)

    def record(self, record_type: str, payload: Mapping[str, Any]) -> None:
        """Write a record to the session log only (JSON-compatible payload), with the step."""
        self._record(record_type, payload)

    def publish(self, event: Event) -> None:
        """Put an already built event into this call's stream (e.g. a sub-agent's events,
        forwarded into its parent's stream). It is not logged: log what matters with
        :meth:`record`."""
        self._publish(event)

    def add_messages(self, *messages: Msg) -> None:
        """Append messages to the working history and the session log — only at a safe point
        (:meth:`Capability.before_model_request`): a steering message added there is part of
        the request about to be prepared."""
        self._add(messages)

    def request_stop(self, reason: str) -> None:
        """Ask the call to end at the next safe point (before the next model request or after
        the running step is committed); it then ends with status ``stopped``."""
        self.stop_reason = reason


# ------------------------------------------------------------------------------ the protocol
class Capability:
    """Base class of capabilities: override what you need (see the module docstring).

    ``name`` identifies the capability in errors, logs and the state: a capability's
    :meth:`section` is stored in ``AgentState.sections[name]``. It defaults to the class name
    in snake case; two capabilities of one agent may not share a name.
    """

    name: str = ""

    # ---------------------------------------------------------------- at construction
    def setup(self, host: CapabilityHost) -> None:
        """Called once, before any other method: keep what you need from ``host``. Raise
        ``ValueError`` naming the problem for a configuration that cannot work (e.g. no
        workspace)."""

    def tools(self) -> Sequence[Tool]:
        """Tools given to the model (asked once, after :meth:`setup`)."""
        return ()

    def instructions(self) -> Mapping[str, str]:
        """Trusted instructions (id → text) added to the system message (asked once)."""
        return {}

    def context_sources(self) -> Sequence[SourceSpec]:
        """Dynamic sources loaded before every reasoning request (asked once)."""
        return ()

    def views(self) -> Sequence[object]:
        """Read-only views this capability answers the others' queries with (see
        :mod:`harnessed.capabilities.queries`); asked when a capability queries, at setup —
        possibly before this capability is set up, so a view's changing answers are
        functions."""
        return ()

    def history_views(self) -> Sequence[HistoryView]:
        """Request-only projections of the history, applied after validation in every
        reasoning request (never stored; same tool-call structure; never longer) (asked
        once)."""
        return ()

    # ------------------------------------------------------------------- per request
    async def call_instructions(self, call: CallContext) -> str | Material | None:
        """Instructions for this call that depend on who calls or on the session (the skills
        this user can load, say), asked at the call's first model request, after
        :meth:`before_model_request`. The answer holds for every request of the call, so the
        system message stays the same from step to step (and in the provider's prompt cache).

        Return a text (a required instruction, ``instruction/<capability name>``), a
        :class:`~harnessed.capabilities.materials.Material` with placement ``system`` (it may
        be optional, or condensable: the compiler shrinks or drops it when the request does not
        fit, and records what it left out), or ``None`` for nothing this call. Instructions
        that never change belong in :meth:`instructions`."""
        return None

    def filter_tools(self, call: CallContext, tools: Sequence[ToolSchema]) -> Sequence[ToolSchema]:
        """The tools this request offers the model, out of ``tools`` (what the agent has, less
        what the capabilities before this one left out): return ``tools`` itself to keep them
        all, or a subset in the same order — a tool may be left out, never added. Runs before
        every model request (synchronous: keep it cheap; do slow checks in
        :meth:`before_model_request` and keep the answer in ``call.values``). A tool that is
        not offered can still be called by a model that saw it before: refuse such a call in
        :meth:`before_tool_call` if it must not run."""
        return tools

    def state_blocks(self, state: AgentState) -> Sequence[StateBlock]:
        """``TASK_STATE`` / ``RUNTIME_STATE`` texts for this request (keep it cheap: it runs
        at every reasoning request; return ``()`` when there is nothing to show)."""
        return ()

    async def before_call(self, call: CallContext) -> None:
        """The call starts: its input is in ``call.state``; nothing was sent yet."""

    async def after_call(self, call: CallContext, end: CallEnd) -> None:
        """The call ended (any way, failures included). Runs in reverse order; exceptions are
        logged, never raised (the call's own outcome stands)."""

    async def before_model_request(self, call: CallContext) -> None:
        """A safe point before each model request is prepared (see :class:`CallContext`)."""

    async def after_model_request(self, call: CallContext, model_call: ModelCall) -> None:
        """A model request finished (``model_call.response``) or failed (``.error``)."""

    async def before_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
    ) -> str | None:
        """Decide whether a tool call runs: ``None`` lets it run; a text refuses it and becomes
        the call's error result (the model reads it). Raising refuses the call too."""
        return None

    async def after_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
    ) -> ToolResultBlock | None:
        """A tool call produced ``result`` (refusals and errors included): return a
        replacement result for the same call, or ``None`` to keep it."""
        return None

    def on_event(self, call: CallContext, event: Event) -> None:
        """Observe each event the call yields (synchronous: keep it quick)."""

    async def close(self) -> None:
        """The agent is closing: wait for background work, release what you hold."""

    # -------------------------------------------------------------------- durable state
    def section(self, state: AgentState) -> Any:
        """This capability's durable, per-session data in ``state`` (``None`` if never set)."""
        return state.sections.get(self.capability_name)

    def set_section(self, state: AgentState, data: Any) -> None:
        """Replace this capability's data in ``state``; it must be JSON-serializable (it is
        saved with the state and shown in the state's revisions). ``None`` removes it."""
        state.set_section(self.capability_name, data)

    @property
    def capability_name(self) -> str:
        """``name``, or the class name in snake case."""
        if self.name:
            return self.name
        return re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()

    def __repr__(self) -> str:
        return f"<capability {self.capability_name}>"


def overrides(capability: Capability, hook: str) -> bool:
    """Whether ``capability`` overrides ``hook`` (the agent checks this once, at setup)."""
    if hook not in HOOKS:
        raise ValueError(f"unknown capability hook {hook!r}; hooks are {', '.join(HOOKS)}")
    return getattr(type(capability), hook) is not getattr(Capability, hook)


def check_name(capability: Capability) -> str:
    """The capability's name, validated."""
    name = capability.capability_name
    if not _NAME.match(name):
        raise ValueError(
            f"capability name {name!r} of {type(capability).__name__} is invalid: use lowercase "
            "letters, digits, '_', '.' or '-'"
        )
    return name
