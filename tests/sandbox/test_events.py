"""The sandbox lifecycle is visible: ``sandbox_acquire`` / ``sandbox_snapshot`` events, their
session-log records, and ``sandbox.acquire`` / ``sandbox.snapshot`` spans."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from harnessed import CustomEvent, HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel
from harnessed.sandbox import BubblewrapSandbox
from harnessed.tracing import Tracing
from harnessed.workspace import FsspecFilesystem, Workspace
from tests.sandbox.conftest import require_bwrap
from tests.sandbox.helpers import execute

CTX = RuntimeContext("ann", "s1")


def exporter_and_provider() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def agent_for(
    workspace: Path | Workspace, sandbox: BubblewrapSandbox, provider: TracerProvider, calls: int
) -> HarnessAgent:
    steps: list[Any] = []
    for turn in range(calls):
        steps += [execute(f"echo turn {turn} >> log.txt && cat log.txt"), f"done {turn}"]
    return HarnessAgent(
        "bot",
        ScriptedModel(steps),
        workspace=workspace,
        shell=sandbox,
        memory=False,
        capabilities=[Tracing(tracer_provider=provider)],
    )


async def sandbox_events(agent: HarnessAgent, text: str) -> list[CustomEvent]:
    return [
        e
        async for e in agent.stream_events(text, CTX)
        if isinstance(e, CustomEvent) and e.name.startswith("sandbox_")
    ]


def spans(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


async def test_a_local_workspace_starts_cold_then_stays_live(tmp_path: Path) -> None:
    exporter, provider = exporter_and_provider()
    sandbox = require_bwrap(BubblewrapSandbox())
    agent = agent_for(tmp_path, sandbox, provider, calls=2)
    try:
        first = await sandbox_events(agent, "one")
        second = await sandbox_events(agent, "two")
        log = [r.payload for r in await agent.session_log(CTX, types=["custom"])]
    finally:
        await agent.close()
    assert [(e.name, e.data["mode"]) for e in first] == [("sandbox_acquire", "cold")]
    assert [(e.name, e.data["mode"]) for e in second] == [("sandbox_acquire", "live")]
    assert first[0].data["backend"] == "bubblewrap"
    assert first[0].data["duration_ms"] >= 0
    acquired = [p["data"]["mode"] for p in log if p["name"] == "sandbox_acquire"]
    assert acquired == ["cold", "live"]
    # the workspace is mounted, not copied: nothing to snapshot
    assert not spans(exporter, "sandbox.snapshot")

    roots = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    acquires = spans(exporter, "sandbox.acquire")
    assert [s.attributes["harnessed.sandbox.mode"] for s in acquires] == ["cold", "live"]
    for span, root in zip(acquires, roots, strict=True):
        assert span.parent is not None and span.parent.span_id == root.context.span_id
        assert span.attributes["harnessed.sandbox.backend"] == "bubblewrap"
        assert span.attributes["harnessed.sandbox.duration_ms"] >= 0
        assert span.end_time >= span.start_time
        assert span.status.status_code == StatusCode.UNSET


async def test_a_new_agent_restores_the_snapshot_of_the_last_call(tmp_path: Path) -> None:
    exporter, provider = exporter_and_provider()
    workspace = f"memory://sandbox-events-{uuid.uuid4().hex}"
    server_one = require_bwrap(BubblewrapSandbox(state_dir=tmp_path / "one"))
    agent = agent_for(Workspace(FsspecFilesystem(workspace)), server_one, provider, calls=1)
    try:
        first = await sandbox_events(agent, "one")
        log = [r.payload for r in await agent.session_log(CTX, types=["custom"])]
    finally:
        await agent.close()
    # the snapshot comes after the end of the stream: only acquire is in it
    assert [(e.name, e.data["mode"]) for e in first] == [("sandbox_acquire", "cold")]
    [snapshot] = [p["data"] for p in log if p["name"] == "sandbox_snapshot"]
    assert snapshot["status"] == "completed" and snapshot["bytes"] > 0
    [snapshot_span] = spans(exporter, "sandbox.snapshot")
    [root] = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert snapshot_span.parent is not None
    assert snapshot_span.parent.span_id == root.context.span_id
    assert snapshot_span.attributes["harnessed.sandbox.bytes"] == snapshot["bytes"]
    assert snapshot_span.attributes["harnessed.sandbox.status"] == "completed"
    assert snapshot_span.end_time <= root.end_time

    server_two = require_bwrap(BubblewrapSandbox(state_dir=tmp_path / "two"))
    again = agent_for(Workspace(FsspecFilesystem(workspace)), server_two, provider, calls=1)
    try:
        second = await sandbox_events(again, "two")
    finally:
        await again.close()
    assert [(e.name, e.data["mode"]) for e in second] == [("sandbox_acquire", "restore")]
    assert [s.attributes["harnessed.sandbox.mode"] for s in spans(exporter, "sandbox.acquire")] == [
        "cold",
        "restore",
    ]


class _NoSnapshots(FsspecFilesystem):
    """Storage that refuses the sandbox snapshots (a full bucket, a lost permission)."""

    def _write(self, rel: str, payload: bytes) -> None:
        if "/sandboxes/" in f"/{rel}":
            raise PermissionError(f"{rel}: write refused by the bucket policy")
        super()._write(rel, payload)


async def test_a_failed_snapshot_is_an_event_with_its_error_and_the_call_succeeds(
    tmp_path: Path,
) -> None:
    exporter, provider = exporter_and_provider()
    storage = _NoSnapshots(f"memory://sandbox-events-{uuid.uuid4().hex}")
    sandbox = require_bwrap(BubblewrapSandbox(state_dir=tmp_path / "one"))
    agent = agent_for(Workspace(storage), sandbox, provider, calls=1)
    try:
        reply = await agent.call("one", CTX)
        log = [r.payload for r in await agent.session_log(CTX, types=["custom"])]
    finally:
        await agent.close()
    assert reply.text == "done 0"
    [failed] = [p["data"] for p in log if p["name"] == "sandbox_snapshot"]
    assert failed["status"] == "failed"
    assert failed["error_type"] == "PermissionError"
    assert "bucket policy" in failed["error"]
    [span] = spans(exporter, "sandbox.snapshot")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"] == "PermissionError"
    assert "bucket policy" in (span.status.description or "")
    [root] = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert root.attributes["harnessed.run.status"] == "completed"
    assert root.status.status_code == StatusCode.UNSET
