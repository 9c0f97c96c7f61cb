"""The manifest and where it goes (BEHAVIOUR.md §1 "Manifest")."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest

from harnessed import (
    ContextManifest,
    ContextPolicy,
    CustomEvent,
    HarnessAgent,
    ModelCallStartEvent,
    RuntimeContext,
)
from harnessed.models import ScriptedModel, ScriptedResponse
from tests.context.helpers import builds, collect_failing, manifest_json, noop
from tests.support.fixtures import CTX, call, collect

SPEC_FIELDS = {
    "call_id",
    "purpose",
    "model",
    "policy_version",
    "estimated_input_tokens",
    "input_limit",
    "counting_method",
    "exact",
    "task_revision",
    "items",
    "transforms",
    "validation",
}
ITEM_FIELDS = {
    "source_type",
    "source_id",
    "content_hash",
    "revision",
    "placement",
    "required",
    "priority",
}


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


async def test_manifest_fields(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "MEMORY-FACT: the user likes tea")
    sys_prompt = "SYS-PROMPT: you fix bugs."
    model = ScriptedModel(["ok"], name="gpt-test", context_window=32_000)
    agent = HarnessAgent("man", model, sys_prompt=sys_prompt, workspace=tmp_path)
    events = await collect(agent, "USER-TEXT: fix it", CTX)
    manifest = agent.last_manifest(CTX)
    assert isinstance(manifest, ContextManifest)
    [start] = [e for e in events if isinstance(e, ModelCallStartEvent)]

    data = manifest.to_dict()
    assert set(data) >= SPEC_FIELDS
    assert data["call_id"] == start.model_call_id == model.requests[0].call_id
    assert (data["purpose"], data["model"], data["validation"]) == (
        "reasoning",
        "gpt-test",
        "passed",
    )
    assert isinstance(data["policy_version"], str) and data["policy_version"]
    assert 0 < data["estimated_input_tokens"] <= data["input_limit"]
    assert data["input_limit"] == 32_000 - 4_000 - 640
    assert data["counting_method"] not in ("", "unavailable")
    assert data["exact"] is False  # the built-in estimator is approximate
    assert data["task_revision"] == 0
    assert data["transforms"] == []
    for item in data["items"]:
        assert set(item) >= ITEM_FIELDS
    prompt = manifest.item("instruction/sys_prompt")
    assert prompt is not None
    digest = hashlib.sha256(sys_prompt.encode()).hexdigest()
    assert prompt.content_hash.removeprefix("sha256:") == digest
    assert len(prompt.revision) >= 16 and digest.startswith(prompt.revision)
    assert (prompt.source_type, prompt.placement, prompt.required) == ("agent", "system", True)
    memory = manifest.item("workspace/MEMORY.md")
    assert memory is not None and memory.placement == "reference" and not memory.required
    assert {i.placement for i in manifest.items} == {"system", "reference"}

    # hashes, never text; and it survives JSON
    text = manifest_json(manifest)
    for fragment in ("SYS-PROMPT", "MEMORY-FACT", "USER-TEXT", "you fix bugs"):
        assert fragment not in text
    assert ContextManifest.from_dict(json.loads(text)) == manifest


async def test_a_build_that_fails_before_counting_reports_unavailable(tmp_path: Path) -> None:
    seen: list[ContextManifest] = []
    model = ScriptedModel(["never"])
    agent = HarnessAgent(
        "early",
        model,
        workspace=tmp_path,
        context_files=["docs/missing.md"],
        context_policy=ContextPolicy(observer=seen.append),
    )
    events, error = await collect_failing(agent, "hi", CTX)
    assert isinstance(error, FileNotFoundError)
    [manifest] = seen
    assert manifest.validation == "build_failed"
    assert (manifest.estimated_input_tokens, manifest.input_limit) == (-1, -1)
    assert manifest.counting_method == "unavailable" and manifest.exact is False
    [build] = builds(events)
    assert (
        build["status"] == "failed"
        and build["error_type"] == type(error).__name__ == "FileNotFoundInWorkspaceError"
    )
    assert build["context_manifest"] == manifest.to_dict()
    assert model.requests == []


async def test_the_observer_gets_every_manifest() -> None:
    seen: list[ContextManifest] = []
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("noop")]), "done"])
    agent = HarnessAgent(
        "obs", model, tools=[noop], context_policy=ContextPolicy(observer=seen.append)
    )
    await agent.call("go", CTX)
    assert [m.call_id for m in seen] == [r.call_id for r in model.requests]
    assert len(set(m.call_id for m in seen)) == 2
    assert agent.last_manifest(CTX) == seen[-1]


async def test_an_observer_that_raises_is_logged_never_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(manifest: ContextManifest) -> None:
        raise RuntimeError("observer exploded")

    model = ScriptedModel(["still fine"])
    agent = HarnessAgent("obs", model, context_policy=ContextPolicy(observer=broken))
    with caplog.at_level(logging.ERROR):
        reply = await agent.call("go", CTX)
    assert reply.text == "still fine"
    assert any(
        r.levelno >= logging.ERROR and r.exc_info and "observer exploded" in str(r.exc_info[1])
        for r in caplog.records
    )
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "passed"


async def test_last_manifest_is_per_session() -> None:
    model = ScriptedModel(["a", "b"])
    agent = HarnessAgent("sess", model)
    one, two = RuntimeContext("u", "one"), RuntimeContext("u", "two")
    assert agent.last_manifest(one) is None
    await agent.call("first", one)
    await agent.call("second", two)
    first, second = agent.last_manifest(one), agent.last_manifest(two)
    assert first is not None and second is not None
    assert first.call_id == model.requests[0].call_id
    assert second.call_id == model.requests[1].call_id
    assert agent.last_manifest(RuntimeContext("other", "one")) is None


async def test_context_build_event_comes_before_each_model_call() -> None:
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("noop")]), "done"])
    agent = HarnessAgent("ev", model, tools=[noop])
    events = await collect(agent, "go", CTX)
    starts = [i for i, e in enumerate(events) if isinstance(e, ModelCallStartEvent)]
    build_at = [
        i for i, e in enumerate(events) if isinstance(e, CustomEvent) and e.name == "context_build"
    ]
    assert len(starts) == len(build_at) == 2
    for build_index, start_index in zip(build_at, starts, strict=True):
        assert build_index < start_index
        build, start = events[build_index], events[start_index]
        assert isinstance(build, CustomEvent) and isinstance(start, ModelCallStartEvent)
        assert set(build.data) >= {
            "model_call_id",
            "purpose",
            "status",
            "context_manifest",
            "error_type",
        }
        assert build.data["model_call_id"] == start.model_call_id
        assert build.data["context_manifest"]["call_id"] == start.model_call_id
        assert (build.data["purpose"], build.data["status"]) == ("reasoning", "passed")
        assert build.data["error_type"] is None
    assert build_at[1] > starts[0]  # one build per request, not one per call
    last = agent.last_manifest(CTX)
    assert last is not None and events[build_at[1]].data["context_manifest"] == last.to_dict()


async def test_every_build_is_written_to_the_session_log() -> None:
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("noop")]), "done"])
    agent = HarnessAgent("log", model, tools=[noop])
    await agent.call("go", CTX)
    records = await agent.session_log(CTX, types=["context/build"])
    manifests = [r.payload["context_manifest"] for r in records]
    assert [m["call_id"] for m in manifests] == [r.call_id for r in model.requests]
    assert all(m["validation"] == "passed" for m in manifests)


def test_policy_version_identifies_the_budget_settings() -> None:
    assert ContextPolicy().version == ContextPolicy().version
    assert ContextPolicy(max_input_tokens=1_000).version == (
        ContextPolicy(max_input_tokens=1_000).version
    )
    versions = {
        ContextPolicy().version,
        ContextPolicy(max_input_tokens=1_000).version,
        ContextPolicy(reserved_output_tokens=1_000).version,
        ContextPolicy(safety_margin_tokens=1_000).version,
    }
    assert len(versions) == 4
