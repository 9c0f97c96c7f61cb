"""The capability seam: what a capability contributes, when its hooks run, and what it costs."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from harnessed import (
    AgentEndEvent,
    CallContext,
    CallEnd,
    Capability,
    CustomEvent,
    HarnessAgent,
    ModelCall,
    Msg,
    RuntimeContext,
    StateBlock,
    ToolContext,
    ToolResultBlock,
    ToolResultEvent,
    ToolUseBlock,
    tool,
)
from harnessed.capabilities import HOOKS, CapabilityHost, SourceSpec, overrides
from harnessed.context import ContextBlock, ContextRequest
from harnessed.events import Event
from harnessed.models import (
    ModelRequest,
    ScriptedModel,
    ScriptedResponse,
    ScriptedToolCall,
    ToolSchema,
)
from harnessed.models.errors import ModelError
from harnessed.state import AgentState
from harnessed.tools import Tool
from tests.support.fixtures import CTX

SRC = Path(__file__).resolve().parents[2] / "src" / "harnessed"


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def uses(*calls: ScriptedToolCall) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=calls)


class Recorder(Capability):
    """Records every hook it hears into a shared list."""

    def __init__(self, label: str, log: list[str]) -> None:
        self.name = label
        self.log = log

    def state_blocks(self, state: AgentState) -> Sequence[StateBlock]:
        self.log.append(f"{self.name}.state_blocks")
        return (StateBlock("RUNTIME_STATE", f"{self.name} is watching"),)

    async def before_call(self, call: CallContext) -> None:
        self.log.append(f"{self.name}.before_call")

    async def after_call(self, call: CallContext, end: CallEnd) -> None:
        self.log.append(f"{self.name}.after_call:{end.status}")

    async def before_model_request(self, call: CallContext) -> None:
        self.log.append(f"{self.name}.before_model_request")

    async def call_instructions(self, call: CallContext) -> str:
        self.log.append(f"{self.name}.call_instructions")
        return f"{self.name} listens"

    def filter_tools(self, call: CallContext, tools: Sequence[ToolSchema]) -> Sequence[ToolSchema]:
        self.log.append(f"{self.name}.filter_tools")
        return tools

    async def after_model_request(self, call: CallContext, model_call: ModelCall) -> None:
        outcome = "ok" if model_call.response is not None else type(model_call.error).__name__
        self.log.append(f"{self.name}.after_model_request:{model_call.iteration}:{outcome}")

    async def before_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
    ) -> str | None:
        self.log.append(f"{self.name}.before_tool_call:{tool_call.id}")
        return None

    async def after_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
    ) -> ToolResultBlock | None:
        self.log.append(f"{self.name}.after_tool_call:{tool_call.id}")
        return None

    async def close(self) -> None:
        self.log.append(f"{self.name}.close")


def manifest_ids(agent: HarnessAgent) -> list[str]:
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    return [item.id for item in manifest.items]


# ------------------------------------------------------------------------------------ cost
async def test_a_capability_not_passed_adds_no_tool_no_instruction_and_no_hook(
    tmp_path: Path,
) -> None:
    def script() -> ScriptedModel:
        return ScriptedModel([uses(ScriptedToolCall("lookup", {"key": "k"}, id="c1")), "done"])

    # the defaults a workspace turns on are capabilities too: off here, to see the bare seam
    off: dict[str, Any] = {"subagents": False, "skills": False, "web": False}
    plain_model = script()
    plain = HarnessAgent("a", plain_model, tools=[lookup], workspace=tmp_path / "plain", **off)
    await plain.call("go", CTX)
    audited_model = script()
    audited = HarnessAgent(
        "a",
        audited_model,
        tools=[lookup],
        workspace=tmp_path / "audited",
        capabilities=[AuditTrail()],
        **off,
    )
    await audited.call("go", CTX)

    plain_tools = [t.name for t in plain_model.requests[0].tools]
    audited_tools = [t.name for t in audited_model.requests[0].tools]
    assert audited_tools == [*plain_tools, "audit_trail"]
    assert len(plain_model.requests[0].tools) == len(audited_model.requests[0].tools) - 1
    # the built-in capabilities a workspace brings, and nothing that was not asked for
    assert "todo_write" not in plain_tools and "plan_enter" not in plain_tools
    assert "task_requirement_propose" not in plain_tools
    assert sorted(manifest_ids(audited)) == sorted([*manifest_ids(plain), "instruction/audit"])
    assert "instruction/audit" not in manifest_ids(plain)

    # per request: the plain agent has no capability hook on the model path or the event path
    caps = plain.capabilities
    assert caps.before_model_request == caps.after_model_request == ()
    assert caps.call_instructions == caps.filter_tools == ()
    assert caps.on_event == caps.after_tool_call == caps.before_call == ()
    assert [c.capability_name for c in caps.before_tool_call] == ["plan_status"]
    assert [c.capability_name for c in caps.state_block_providers] == [
        "plan_status",
        "task_contract",
    ]


async def test_a_hook_not_overridden_is_never_called() -> None:
    class ToolsOnly(Capability):
        def tools(self) -> Sequence[Tool]:
            return [lookup]

    capability = ToolsOnly()
    assert not any(overrides(capability, hook) for hook in HOOKS)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a hook that was not overridden was called")

    model = ScriptedModel([uses(ScriptedToolCall("lookup", {"key": "k"})), "done"])
    agent = HarnessAgent("a", model, capabilities=[capability])
    for hook in HOOKS:  # found at setup: replacing them later changes nothing
        setattr(capability, hook, boom)
    reply = await agent.call("go", CTX)
    assert reply.text == "done"
    assert [t.name for t in model.requests[0].tools] == ["lookup"]


def test_overrides_rejects_an_unknown_hook() -> None:
    with pytest.raises(ValueError, match="unknown capability hook 'before_everything'"):
        overrides(Capability(), "before_everything")


# ----------------------------------------------------------------------------- the order
async def test_hooks_run_in_the_documented_order() -> None:
    log: list[str] = []
    model = ScriptedModel([uses(ScriptedToolCall("lookup", {"key": "k"}, id="c1")), "done"])
    agent = HarnessAgent(
        "a", model, tools=[lookup], capabilities=[Recorder("first", log), Recorder("second", log)]
    )
    await agent.call("go", CTX)
    await agent.close()
    assert log == [
        "first.before_call",
        "second.before_call",
        "first.before_model_request",
        "second.before_model_request",
        "first.call_instructions",
        "second.call_instructions",
        "first.filter_tools",
        "second.filter_tools",
        "first.state_blocks",
        "second.state_blocks",
        "second.after_model_request:1:ok",
        "first.after_model_request:1:ok",
        "first.before_tool_call:c1",
        "second.before_tool_call:c1",
        "second.after_tool_call:c1",
        "first.after_tool_call:c1",
        "first.before_model_request",
        "second.before_model_request",
        "first.filter_tools",
        "second.filter_tools",
        "first.state_blocks",
        "second.state_blocks",
        "second.after_model_request:2:ok",
        "first.after_model_request:2:ok",
        "second.after_call:completed",
        "first.after_call:completed",
        "second.close",
        "first.close",
    ]
    state_message = model.requests[0].messages[-1].text
    assert "<RUNTIME_STATE>\nfirst is watching\nsecond is watching\n</RUNTIME_STATE>" in (
        state_message
    )
    system = model.requests[0].messages[0].text
    assert system.index("first listens") < system.index("second listens")


async def test_a_failed_model_request_and_call_are_reported_to_the_capabilities() -> None:
    log: list[str] = []
    agent = HarnessAgent(
        "a", ScriptedModel([ModelError("provider down")]), capabilities=[Recorder("r", log)]
    )
    with pytest.raises(ModelError, match="provider down"):
        await agent.call("go", CTX)
    assert "r.after_model_request:1:ModelError" in log
    assert log[-1] == "r.after_call:error"


# ------------------------------------------------------------------------------ tool calls
async def test_the_first_refusal_wins_and_the_tool_and_the_application_guard_do_not_run() -> None:
    ran: list[str] = []
    guarded: list[str] = []

    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    class NoDeletes(Capability):
        async def before_tool_call(
            self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
        ) -> str | None:
            if tool_call.input.get("path") == "/etc":
                return "Refused: /etc is protected."
            return None

    class Second(Capability):
        async def before_tool_call(
            self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
        ) -> str | None:
            return "never shown" if tool_call.input.get("path") == "/etc" else None

    async def app_guard(call: ToolUseBlock, tool: Tool, context: ToolContext) -> str | None:
        guarded.append(call.id)
        return None

    model = ScriptedModel(
        [
            uses(
                ScriptedToolCall("delete", {"path": "/etc"}, id="a"),
                ScriptedToolCall("delete", {"path": "tmp"}, id="b"),
            ),
            "ok",
        ]
    )
    agent = HarnessAgent(
        "a", model, tools=[delete], tool_guard=app_guard, capabilities=[NoDeletes(), Second()]
    )
    await agent.call("clean up", CTX)
    results = {r.tool_use_id: r for m in model.requests[1].messages for r in m.tool_results}
    assert results["a"].is_error and results["a"].content == "Refused: /etc is protected."
    assert results["b"].content == "deleted"
    assert ran == ["tmp"] and guarded == ["b"]


async def test_a_raising_before_tool_call_refuses_only_that_call() -> None:
    class Broken(Capability):
        async def before_tool_call(
            self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
        ) -> str | None:
            raise RuntimeError("policy service unreachable")

    model = ScriptedModel([uses(ScriptedToolCall("lookup", {"key": "k"}, id="a")), "ok"])
    agent = HarnessAgent("a", model, tools=[lookup], capabilities=[Broken()])
    assert (await agent.call("go", CTX)).text == "ok"
    (result,) = [r for m in model.requests[1].messages for r in m.tool_results]
    assert result.is_error and "policy service unreachable" in result.content


async def test_after_tool_call_replaces_the_result_the_model_and_the_log_see() -> None:
    class Redact(Capability):
        async def after_tool_call(
            self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
        ) -> ToolResultBlock | None:
            return ToolResultBlock(
                result.tool_use_id, result.content.replace("k", "*"), name=result.name
            )

    model = ScriptedModel([uses(ScriptedToolCall("lookup", {"key": "k"}, id="a")), "ok"])
    agent = HarnessAgent("a", model, tools=[lookup], capabilities=[Redact()])
    events = [e async for e in agent.stream_events("go", CTX)]
    (result,) = [r for m in model.requests[1].messages for r in m.tool_results]
    assert result.content == "value of *"
    streamed = [e for e in events if isinstance(e, ToolResultEvent)]
    assert streamed[0].result.content == "value of *"
    logged = [r for m in await agent.session_messages(CTX) for r in m.tool_results]
    assert [r.content for r in logged] == ["value of *"]


async def test_after_tool_call_must_answer_the_same_call() -> None:
    class Wrong(Capability):
        async def after_tool_call(
            self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
        ) -> ToolResultBlock | None:
            return ToolResultBlock("another-call", "x")

    model = ScriptedModel([uses(ScriptedToolCall("lookup", {"key": "k"}, id="a")), "ok"])
    agent = HarnessAgent("a", model, tools=[lookup], capabilities=[Wrong()])
    with pytest.raises(TypeError, match="must return None or a ToolResultBlock for call 'a'"):
        await agent.call("go", CTX)
    state = await agent.load_state(CTX)
    assert not [m for m in state.history if m.role in ("assistant", "tool")]  # no half step


# ------------------------------------------------------------------------ state sections
class Counter(Capability):
    async def before_call(self, call: CallContext) -> None:
        data = self.section(call.state) or {"calls": 0}
        self.set_section(call.state, {"calls": data["calls"] + 1})


async def test_a_state_section_is_durable_per_session(tmp_path: Path) -> None:
    def build() -> HarnessAgent:
        return HarnessAgent(
            "a",
            ScriptedModel(["one", "two", "three"]),
            workspace=tmp_path,
            capabilities=[Counter()],
        )

    agent = build()
    await agent.call("hi", CTX)
    await agent.call("again", CTX)
    await agent.call("elsewhere", RuntimeContext("u", "other"))
    again = build()  # a new process reads the same files
    assert (await again.load_state(CTX)).sections == {"counter": {"calls": 2}}
    other = await again.load_state(RuntimeContext("u", "other"))
    assert other.sections == {"counter": {"calls": 1}}
    stored = json.loads(next((tmp_path / ".harnessed" / "state").rglob("*.json")).read_text())
    assert "counter" in stored["sections"]


async def test_a_section_must_be_json_and_nothing_is_saved_when_it_is_not() -> None:
    class Bad(Capability):
        async def before_call(self, call: CallContext) -> None:
            self.set_section(call.state, {"when": object()})

    agent = HarnessAgent("a", ScriptedModel(["x"]), capabilities=[Bad()])
    with pytest.raises(TypeError, match="state section 'bad' must be JSON-serializable"):
        await agent.call("hi", CTX)
    assert (await agent.load_state(CTX)).sections == {}


async def test_the_application_changes_a_section_through_the_host() -> None:
    class Quota(Capability):
        def setup(self, host: CapabilityHost) -> None:
            self.host = host

        async def grant(self, ctx: RuntimeContext, amount: int) -> None:
            def change(state: AgentState) -> list[tuple[str, Mapping[str, Any]]]:
                self.set_section(state, {"left": amount})
                return [("quota/changed", {"left": amount})]

            await self.host.change_state(ctx, change)

        def state_blocks(self, state: AgentState) -> Sequence[StateBlock]:
            data = self.section(state)
            return [StateBlock("RUNTIME_STATE", f"quota left: {data['left']}")] if data else []

    quota = Quota()
    model = ScriptedModel(["ok"])
    agent = HarnessAgent("a", model, capabilities=[quota])
    await quota.grant(CTX, 5)
    await agent.call("hi", CTX)
    assert "quota left: 5" in model.requests[0].messages[-1].text
    records = await agent.session_log(CTX, types=["quota/changed"])
    assert records[0].payload == {"left": 5, "by": "application"}


# ------------------------------------------------------------------ safe points, events
async def test_a_message_added_at_the_safe_point_is_in_the_next_request_and_the_log() -> None:
    class Steer(Capability):
        def __init__(self) -> None:
            self.queue = ["Use the staging key instead."]

        async def before_model_request(self, call: CallContext) -> None:
            if self.queue and call.state.history[-1].role == "tool":
                call.add_messages(Msg.user(self.queue.pop()))

    model = ScriptedModel([uses(ScriptedToolCall("lookup", {"key": "k"}, id="a")), "ok"])
    agent = HarnessAgent("a", model, tools=[lookup], capabilities=[Steer()])
    await agent.call("go", CTX)
    second = [m.text for m in model.requests[1].messages if m.role == "user"]
    assert "Use the staging key instead." in second
    assert "Use the staging key instead." not in [
        m.text for m in model.requests[0].messages if m.role == "user"
    ]
    logged = [m.text for m in await agent.session_messages(CTX)]
    assert logged.index("Use the staging key instead.") == 3  # user, assistant, tool, steer


async def test_a_requested_stop_ends_the_call_at_the_next_safe_point() -> None:
    log: list[str] = []

    class StopAfterTools(Capability):
        async def after_tool_call(
            self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
        ) -> ToolResultBlock | None:
            call.request_stop("the user interrupted")
            return None

    model = ScriptedModel([uses(ScriptedToolCall("lookup", {"key": "k"}, id="a")), "never"])
    agent = HarnessAgent(
        "a", model, tools=[lookup], capabilities=[StopAfterTools(), Recorder("r", log)]
    )
    events = [e async for e in agent.stream_events("go", CTX)]
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.status == "stopped"
    assert "the user interrupted" in end.reply.text
    assert len(model.requests) == 1  # no model request after the stop
    assert log[-1] == "r.after_call:stopped"
    state = await agent.load_state(CTX)
    assert [m.role for m in state.history] == ["user", "assistant", "tool", "assistant"]


async def test_published_events_reach_the_stream_and_on_event_sees_every_event() -> None:
    seen: list[str] = []

    class Observer(Capability):
        def on_event(self, call: CallContext, event: Event) -> None:
            seen.append(event.type)

    @tool
    async def spawn(ctx: ToolContext) -> str:
        """Run a helper."""
        assert ctx.call is not None
        child = CustomEvent(name="child_text", data={"text": "hi"}, run_id="child", session_id="c")
        ctx.call.publish(child)
        return "spawned"

    model = ScriptedModel([uses(ScriptedToolCall("spawn", {}, id="a")), "ok"])
    agent = HarnessAgent("a", model, tools=[spawn], capabilities=[Observer()])
    events = [e async for e in agent.stream_events("go", CTX)]
    forwarded = [e for e in events if isinstance(e, CustomEvent) and e.name == "child_text"]
    assert forwarded and forwarded[0].run_id == "child"
    assert seen == [e.type for e in events]


# --------------------------------------------------------------- contributions, errors
async def test_instructions_sources_and_views_are_contributed_once() -> None:
    loads: list[str] = []

    async def weather(request: ContextRequest) -> list[ContextBlock]:
        loads.append(request.call_id)
        return [ContextBlock.runtime("weather", "sunny")]

    def hide_old(history: Sequence[Msg], state: AgentState) -> Sequence[Msg]:
        return [m.replace(content="[older]") if m.text == "old" else m for m in history]

    class Everything(Capability):
        def instructions(self) -> Mapping[str, str]:
            return {"tone": "Answer briefly."}

        def context_sources(self) -> Sequence[SourceSpec]:
            return [SourceSpec("weather", weather, timeout=1.0)]

        def history_views(self) -> Sequence[Any]:
            return [hide_old]

    model = ScriptedModel(["first", "second"])
    agent = HarnessAgent("a", model, capabilities=[Everything()])
    await agent.call("old", CTX)
    await agent.call("new", CTX)
    request: ModelRequest = model.requests[1]
    assert "Answer briefly." in request.messages[0].text
    assert "sunny" in request.messages[-1].text
    assert next(m.text for m in request.messages if m.role == "user") == "[older]"
    assert len(loads) == 2
    assert (await agent.session_messages(CTX))[0].text == "old"  # the view changed no record


def test_names_are_unique_and_tools_do_not_collide() -> None:
    class Same(Capability):
        name = "twin"

    with pytest.raises(ValueError, match="two capabilities are named 'twin'"):
        HarnessAgent("a", ScriptedModel(), capabilities=[Same(), Same()])

    class GivesLookup(Capability):
        def __init__(self, label: str) -> None:
            self.name = label

        def tools(self) -> Sequence[Tool]:
            return [lookup]

    with pytest.raises(ValueError, match="capabilities 'one' and 'two' both give a tool"):
        HarnessAgent("a", ScriptedModel(), capabilities=[GivesLookup("one"), GivesLookup("two")])
    # the application's own tool wins over a capability's
    agent = HarnessAgent("a", ScriptedModel(), tools=[lookup], capabilities=[GivesLookup("one")])
    assert agent.toolkit.names == ["lookup"]

    with pytest.raises(TypeError, match="capabilities must be Capability objects"):
        HarnessAgent("a", ScriptedModel(), capabilities=[object()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="capability name 'Bad Name'"):
        HarnessAgent("a", ScriptedModel(), capabilities=[GivesLookup("Bad Name")])


def test_a_capability_reaches_the_agent_at_setup(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    class Probe(Capability):
        def setup(self, host: CapabilityHost) -> None:
            seen.update(
                name=host.agent_name,
                model=host.model,
                workspace=host.workspace,
                session_store=host.session_store,
                estimator=host.estimator.count_text("hello world") > 0,
                counter=host.capability(Counter),
            )

    counter = Counter()
    model = ScriptedModel()
    agent = HarnessAgent("probe", model, workspace=tmp_path, capabilities=[counter, Probe()])
    assert seen["name"] == "probe" and seen["model"] is model
    assert seen["workspace"] is agent.workspace and seen["session_store"] is agent.session_store
    assert seen["estimator"] is True and seen["counter"] is counter


def test_nothing_below_the_agent_imports_it() -> None:
    importers = []
    for path in SRC.rglob("*.py"):
        if (path.name == "__init__.py" and path.parent == SRC) or "cli" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "harnessed.agent":
                importers.append(str(path.relative_to(SRC)))
    assert importers == []
    # a few hundred lines at most: configuration, the forwards of its parts, call and events
    assert len((SRC / "agent.py").read_text(encoding="utf-8").splitlines()) < 400


class AuditTrail(Capability):
    """A small capability with one tool and one instruction (for the cost test)."""

    def instructions(self) -> Mapping[str, str]:
        return {"audit": "Calls are audited."}

    def tools(self) -> Sequence[Tool]:
        @tool(read_only=True)
        def audit_trail() -> str:
            """Show the audit trail."""
            return ""

        return [audit_trail]


async def test_a_sync_tool_in_a_worker_thread_can_publish_and_emit() -> None:
    @tool
    def helper(ctx: ToolContext) -> str:
        """Runs in a worker thread."""
        assert ctx.call is not None
        ctx.call.publish(CustomEvent(name="from_thread", data={}, run_id="child", session_id="c"))
        ctx.emit("progress", {"done": 1})
        return "ok"

    model = ScriptedModel([uses(ScriptedToolCall("helper", {}, id="a")), "done"])
    agent = HarnessAgent("a", model, tools=[helper])
    events = [e async for e in agent.stream_events("go", CTX)]
    names = [e.name for e in events if isinstance(e, CustomEvent)]
    assert "from_thread" in names and "progress" in names
    assert names.index("from_thread") < names.index("progress")
    records = await agent.session_log(CTX, types=["custom"])
    assert [r.payload["name"] for r in records] == ["progress"]
