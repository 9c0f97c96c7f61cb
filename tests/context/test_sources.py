"""Dynamic context sources (BEHAVIOUR.md §1 "dynamic sources"), through the public API."""

from __future__ import annotations

import asyncio
import time

import pytest

from harnessed import (
    ContextBlock,
    ContextRequest,
    ContextSourceError,
    ErrorEvent,
    HarnessAgent,
    ModelCallStartEvent,
    RuntimeContext,
    SourceFailurePolicy,
    tool,
)
from harnessed.context import ContextCompiler, SourceResultError
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from harnessed.runtime import SessionRef
from harnessed.state import AgentState
from tests.context.helpers import builds, collect_failing, context_text, info_for, noop, system_text
from tests.support.fixtures import call, collect

CTX = RuntimeContext("user-1", "session-1")


class LookupFailed(Exception):
    """An application error raised by a source."""


# ---------------------------------------------------------------- blocks


def test_block_builders_set_placement_and_return_copies() -> None:
    runtime = ContextBlock.runtime("quota", "3 refunds left")
    reference = ContextBlock.reference("guide", "How to refund")
    assert (runtime.placement, reference.placement) == ("runtime", "reference")
    changed = reference.with_revision("v7").with_priority(5).required()
    assert (changed.revision, changed.priority, changed.is_required) == ("v7", 5, True)
    # the original is untouched: builders return copies
    assert (reference.revision, reference.priority, reference.is_required) == (None, 0, False)
    assert changed.text == reference.text and changed.id == reference.id


@pytest.mark.parametrize("blank", ["", " ", "\t\n", 7])
def test_blank_revisions_are_rejected_everywhere(blank: object) -> None:
    block = ContextBlock.reference("guide", "How to refund")
    with pytest.raises(ValueError, match="'guide' revision must be non-blank"):
        block.with_revision(blank)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'guide' revision must be non-blank"):
        ContextBlock("guide", "How to refund", "reference", revision=blank)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="priority"):
        ContextBlock("guide", "How to refund", "reference", priority="high")  # type: ignore[arg-type]
    assert ContextBlock("guide", "text", "reference", revision="v1").effective_revision == "v1"


def test_a_source_can_never_create_a_system_block() -> None:
    with pytest.raises(ValueError, match="placement"):
        ContextBlock("rule", "obey me", "system")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ContextBlock.runtime("bad id", "text")


# ---------------------------------------------------------- registration


async def _empty(request: ContextRequest) -> list[ContextBlock]:
    return []


@pytest.mark.parametrize("bad_id", ["", "-lead", ".hidden", "has space", "a/b", "é", "x:y"])
def test_source_and_instruction_ids_are_checked(bad_id: str) -> None:
    agent = HarnessAgent("reg", ScriptedModel())
    with pytest.raises(ValueError, match="invalid"):
        agent.add_context_source(bad_id, _empty)
    with pytest.raises(ValueError, match="invalid"):
        agent.add_instruction(bad_id, "a rule")
    with pytest.raises(ValueError, match="invalid"):
        HarnessAgent("reg", ScriptedModel(), instructions={bad_id: "a rule"})


@pytest.mark.parametrize("text", ["", "   ", None])
def test_instructions_must_be_text(text: object) -> None:
    agent = HarnessAgent("reg", ScriptedModel())
    with pytest.raises(ValueError, match="non-blank"):
        agent.add_instruction("rule", text)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-blank"):
        HarnessAgent("reg", ScriptedModel(), instructions={"rule": text})  # type: ignore[dict-item]


def test_good_ids_are_accepted() -> None:
    agent = HarnessAgent("reg", ScriptedModel())
    for good in ("a", "0", "build-status", "crm.v2", "A_b-c.d"):
        agent.add_context_source(good, _empty)
        agent.add_instruction(good, "a rule")


def test_duplicate_source_and_instruction_ids_fail_at_registration() -> None:
    agent = HarnessAgent("reg", ScriptedModel(), instructions={"billing": "No refunds > 100."})
    agent.add_context_source("crm", _empty)
    with pytest.raises(ValueError, match="already registered"):
        agent.add_context_source("crm", _empty)
    with pytest.raises(ValueError, match="already registered"):
        agent.add_instruction("billing", "Another rule.")
    agent.add_instruction("tone", "Be brief.")
    with pytest.raises(ValueError, match="already registered"):
        agent.add_instruction("tone", "Be verbose.")


@pytest.mark.parametrize("timeout", [0, -1, -0.5])
def test_timeout_must_be_positive(timeout: float) -> None:
    agent = HarnessAgent("reg", ScriptedModel())
    with pytest.raises(ValueError, match="timeout"):
        agent.add_context_source("crm", _empty, timeout=timeout)
    agent.add_context_source("crm", _empty, timeout=0.01)  # the id is still free


def test_nan_timeout_is_rejected() -> None:
    agent = HarnessAgent("reg", ScriptedModel())
    with pytest.raises(ValueError, match="timeout"):
        agent.add_context_source("crm", _empty, timeout=float("nan"))


def test_on_failure_must_be_a_policy() -> None:
    agent = HarnessAgent("reg", ScriptedModel())
    with pytest.raises(TypeError, match="on_failure"):
        agent.add_context_source("crm", _empty, on_failure="omit")  # type: ignore[arg-type]


def test_registration_never_calls_the_source() -> None:
    calls: list[ContextRequest] = []

    async def source(request: ContextRequest) -> list[ContextBlock]:
        calls.append(request)
        return []

    class ObjectSource:
        async def load(self, request: ContextRequest) -> list[ContextBlock]:
            calls.append(request)
            return []

    agent = HarnessAgent("reg", ScriptedModel())
    agent.add_context_source("fn", source)
    agent.add_context_source("obj", ObjectSource(), on_failure=SourceFailurePolicy.OMIT)
    assert calls == []


# -------------------------------------------------------------- loading


async def test_sources_load_before_every_reasoning_request_with_the_request_identity() -> None:
    seen: list[ContextRequest] = []

    class Quota:
        async def load(self, request: ContextRequest) -> list[ContextBlock]:
            seen.append(request)
            return [ContextBlock.runtime("left", f"refunds left: {3 - len(seen) + 1}")]

    model = ScriptedModel([ScriptedResponse(tool_calls=[call("noop")]), "done"])
    agent = HarnessAgent("support", model, tools=[noop])
    agent.add_context_source("quota", Quota())
    events = await collect(agent, "refund order 7", CTX)

    assert len(seen) == 2 == len(model.requests)  # every request, not once per call
    starts = [e for e in events if isinstance(e, ModelCallStartEvent)]
    for request, start, sent in zip(seen, starts, model.requests, strict=True):
        assert request == ContextRequest(
            agent_id="support",
            user_id="user-1",
            session_id="session-1",
            call_id=start.model_call_id,
            purpose="reasoning",
        )
        assert sent.call_id == start.model_call_id
    assert "refunds left: 3" in context_text(model.requests[0])
    assert "refunds left: 2" in context_text(model.requests[1])
    assert "refunds left: 3" not in context_text(model.requests[1])


async def test_material_id_is_source_id_slash_block_id() -> None:
    async def crm(request: ContextRequest) -> list[ContextBlock]:
        return [
            ContextBlock.runtime("customer", "tier: gold").with_priority(3),
            ContextBlock.reference("policy", "Refund policy text").with_revision("rev-9"),
        ]

    agent = HarnessAgent("m", ScriptedModel(["ok"]))
    agent.add_context_source("crm.v2", crm)
    await agent.call("hello", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    customer = manifest.item("source/crm.v2/customer")
    policy = manifest.item("source/crm.v2/policy")
    assert customer is not None and policy is not None
    assert (customer.source_type, customer.source_id) == ("source", "crm.v2")
    assert (customer.placement, customer.priority, customer.required) == ("runtime", 3, False)
    assert (policy.placement, policy.revision) == ("reference", "rev-9")


async def _none(request: ContextRequest) -> list[ContextBlock] | None:
    return None


async def _raises(request: ContextRequest) -> list[ContextBlock]:
    raise LookupFailed("CRM is down")


async def _hangs(request: ContextRequest) -> list[ContextBlock]:
    await asyncio.sleep(5)
    return [ContextBlock.runtime("late", "too late")]


FAILURES = pytest.mark.parametrize(
    ("source", "cause"),
    [(_none, SourceResultError), (_raises, LookupFailed), (_hangs, TimeoutError)],
    ids=["returns-none", "raises", "times-out"],
)


@FAILURES
async def test_fail_policy_stops_the_call_and_commits_nothing(
    source: object, cause: type[BaseException]
) -> None:
    model = ScriptedModel(["never sent"])
    agent = HarnessAgent("failing", model)
    agent.add_context_source("crm", source, timeout=0.05)  # type: ignore[arg-type]
    started = time.perf_counter()
    events, error = await collect_failing(agent, "hello", CTX)
    assert time.perf_counter() - started < 1.0  # the timeout cancelled the hanging source

    assert isinstance(error, ContextSourceError)
    assert isinstance(error.__cause__, cause)
    assert model.requests == []  # the model was never called
    assert not any(isinstance(e, ModelCallStartEvent) for e in events)
    [build] = builds(events)
    assert build["status"] == "failed"
    assert build["error_type"] == "ContextSourceError"  # the class name only
    manifest = build["context_manifest"]
    assert manifest["validation"] == "build_failed"
    # it failed before anything was counted
    assert (manifest["estimated_input_tokens"], manifest["input_limit"]) == (-1, -1)
    assert manifest["counting_method"] == "unavailable"
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].error_type == "ContextSourceError"
    # nothing from the failed call was committed but the user's input (BEHAVIOUR.md §8)
    stored = await agent.load_state(CTX)
    assert [m.role for m in stored.history] == ["user"]


@pytest.mark.parametrize(
    ("source", "name"),
    [(_none, "SourceResultError"), (_raises, "LookupFailed"), (_hangs, "TimeoutError")],
    ids=["returns-none", "raises", "times-out"],
)
async def test_omit_policy_skips_the_source_and_records_why(source: object, name: str) -> None:
    async def healthy(request: ContextRequest) -> list[ContextBlock]:
        return [ContextBlock.runtime("ok", "healthy source text")]

    model = ScriptedModel(["fine"])
    agent = HarnessAgent("omit", model)
    agent.add_context_source("crm", source, timeout=0.05, on_failure=SourceFailurePolicy.OMIT)  # type: ignore[arg-type]
    agent.add_context_source("healthy", healthy)
    reply = await agent.call("hello", CTX)
    assert reply.text == "fine"
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "passed"
    assert manifest.transforms == (f"source_unavailable:source/crm/:{name}",)
    assert not any(i.source_id == "crm" for i in manifest.items)
    assert manifest.item("source/healthy/ok") is not None
    sent = context_text(model.requests[0])
    assert "healthy source text" in sent
    assert "too late" not in sent and "crm" not in sent  # the model is not told


async def test_omitted_source_never_shows_a_stale_value() -> None:
    answers = iter(["build status: GREEN-1"])

    async def build(request: ContextRequest) -> list[ContextBlock]:
        text = next(answers, None)
        if text is None:
            await asyncio.sleep(5)  # times out at the second request
        return [ContextBlock.runtime("status", text or "unreachable")]

    model = ScriptedModel([ScriptedResponse(tool_calls=[call("noop")]), "done"])
    agent = HarnessAgent("stale", model, tools=[noop])
    agent.add_context_source("build", build, timeout=0.05, on_failure=SourceFailurePolicy.OMIT)
    events = await collect(agent, "status?", CTX)

    assert "GREEN-1" in context_text(model.requests[0])
    assert all("GREEN-1" not in m.text for m in model.requests[1].messages)
    first, second = (b["context_manifest"] for b in builds(events))
    assert first["transforms"] == []
    assert second["transforms"] == ["source_unavailable:source/build/:TimeoutError"]


async def test_a_timeout_cancels_the_source() -> None:
    state = {"started": False, "cancelled": False, "finished": False}

    async def slow(request: ContextRequest) -> list[ContextBlock]:
        state["started"] = True
        try:
            await asyncio.sleep(0.3)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        state["finished"] = True
        return []

    agent = HarnessAgent("cancel", ScriptedModel(["ok"]))
    agent.add_context_source("slow", slow, timeout=0.05, on_failure=SourceFailurePolicy.OMIT)
    await agent.call("hi", CTX)
    await asyncio.sleep(0.4)
    assert state == {"started": True, "cancelled": True, "finished": False}


async def test_an_empty_list_means_nothing_relevant() -> None:
    calls = 0

    async def nothing(request: ContextRequest) -> list[ContextBlock]:
        nonlocal calls
        calls += 1
        return []

    model = ScriptedModel(["ok"])
    agent = HarnessAgent("empty", model)
    agent.add_context_source("nothing", nothing)
    await agent.call("hi", CTX)
    assert calls == 1
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "passed"
    assert manifest.transforms == ()
    assert [i.source_type for i in manifest.items if i.source_type == "source"] == []
    assert context_text(model.requests[0]) == ""  # no reference message at all


def _duplicate_ids(request: ContextRequest) -> list[ContextBlock]:
    return [ContextBlock.runtime("a", "one"), ContextBlock.reference("a", "two")]


def _not_a_block(request: ContextRequest) -> list[object]:
    return [ContextBlock.runtime("a", "one"), "just a string"]


def _required_block(request: ContextRequest) -> list[ContextBlock]:
    return [ContextBlock.reference("must", "keep me").required()]


FAIL, OMIT = SourceFailurePolicy.FAIL, SourceFailurePolicy.OMIT


@pytest.mark.parametrize(
    ("source", "policy", "message"),
    [
        (_duplicate_ids, FAIL, "twice"),
        (_duplicate_ids, OMIT, "twice"),
        (_not_a_block, FAIL, "non-block"),
        (_not_a_block, OMIT, "non-block"),
        (_required_block, OMIT, "required"),
    ],
    ids=[
        "duplicate-ids-fail",
        "duplicate-ids-omit",
        "non-block-fail",
        "non-block-omit",
        "required-block-omit",
    ],
)
async def test_structural_errors_raise_under_any_policy(
    source: object, policy: SourceFailurePolicy, message: str
) -> None:
    model = ScriptedModel(["never"])
    agent = HarnessAgent("structural", model)
    agent.add_context_source("bad", source, on_failure=policy)  # type: ignore[arg-type]
    events, error = await collect_failing(agent, "hi", CTX)
    assert isinstance(error, ContextSourceError)
    assert message in str(error)
    assert model.requests == []
    [build] = builds(events)
    assert build["status"] == "failed" and build["error_type"] == "ContextSourceError"


async def test_a_required_block_from_a_fail_source_is_kept() -> None:
    model = ScriptedModel(["ok"])
    agent = HarnessAgent("required", model)
    agent.add_context_source("bad", _required_block)
    await agent.call("hi", CTX)
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    item = manifest.item("source/bad/must")
    assert item is not None and item.required
    assert "keep me" in context_text(model.requests[0])


async def test_sources_load_concurrently_but_keep_registration_order() -> None:
    finished: list[str] = []

    def delayed(name: str, delay: float):  # type: ignore[no-untyped-def]
        async def load(request: ContextRequest) -> list[ContextBlock]:
            await asyncio.sleep(delay)
            finished.append(name)
            return [ContextBlock.reference("doc", f"{name} text")]

        return load

    agent = HarnessAgent("conc", ScriptedModel(["ok"]))
    agent.add_context_source("zeta", delayed("zeta", 0.3))  # registered first, finishes last
    agent.add_context_source("alpha", delayed("alpha", 0.25))
    started = time.perf_counter()
    await agent.call("hi", CTX)
    elapsed = time.perf_counter() - started
    assert finished == ["alpha", "zeta"]
    assert elapsed < 0.5, f"two 0.3 s sources took {elapsed:.2f}s: not concurrent"
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    ids = [i.id for i in manifest.items if i.source_type == "source"]
    assert ids == ["source/zeta/doc", "source/alpha/doc"]


async def test_a_tools_effect_on_a_source_is_visible_at_the_next_step() -> None:
    tickets = {"T-1": "open"}

    @tool
    def close_ticket(ticket: str) -> str:
        """Close a ticket."""
        tickets[ticket] = "closed"
        return f"{ticket} closed"

    async def ticket_source(request: ContextRequest) -> list[ContextBlock]:
        return [ContextBlock.runtime("T-1", f"ticket T-1 is {tickets['T-1'].upper()}")]

    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("close_ticket", ticket="T-1")]), "closed it"]
    )
    agent = HarnessAgent("tickets", model, tools=[close_ticket])
    agent.add_context_source("tickets", ticket_source)
    await agent.call("close T-1", CTX)
    assert "ticket T-1 is OPEN" in context_text(model.requests[0])
    assert "ticket T-1 is CLOSED" in context_text(model.requests[1])
    assert "OPEN" not in context_text(model.requests[1])


async def test_source_text_never_reaches_the_system_message() -> None:
    async def sneaky(request: ContextRequest) -> list[ContextBlock]:
        return [
            ContextBlock.runtime("now", "RUNTIME-FACT-42"),
            ContextBlock.reference("doc", "REFERENCE-DOC-42").required(),
        ]

    model = ScriptedModel(["ok"])
    agent = HarnessAgent("sys", model, sys_prompt="You help.")
    agent.add_context_source("sneaky", sneaky)
    await agent.call("hi", CTX)
    request = model.requests[0]
    assert "RUNTIME-FACT-42" not in system_text(request)
    assert "REFERENCE-DOC-42" not in system_text(request)
    assert "RUNTIME-FACT-42" in context_text(request)
    assert "REFERENCE-DOC-42" in context_text(request)


# ------------------------------------------- the compiler on its own (no agent)


async def test_a_failing_fail_source_stops_the_other_loads() -> None:
    state = {"cancelled": False, "finished": False}

    async def slow(request: ContextRequest) -> list[ContextBlock]:
        try:
            await asyncio.sleep(0.2)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        state["finished"] = True
        return []

    compiler = ContextCompiler()
    compiler.sources.add("slow", slow)
    compiler.sources.add("broken", _raises)
    model = ScriptedModel()
    agent_state = AgentState.new(SessionRef("solo", "u", "s"))
    with pytest.raises(ContextSourceError):
        await compiler(agent_state, ModelRequest(messages=()), info_for("solo", model))
    await asyncio.sleep(0.3)
    assert state == {"cancelled": True, "finished": False}


async def test_a_timeout_says_which_source_and_how_long() -> None:
    async def hangs(request: ContextRequest) -> list[ContextBlock]:
        await asyncio.sleep(10)
        return []

    agent = HarnessAgent("slow", ScriptedModel(["never sent"]))
    agent.add_context_source("crm", hangs, timeout=0.05)
    _, error = await collect_failing(agent, "hello", CTX)
    assert isinstance(error, ContextSourceError)
    assert "'crm'" in str(error) and "0.05 s" in str(error) and "timeout" in str(error)
