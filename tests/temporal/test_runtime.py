"""Turns on Temporal with three worker processes: killed workers, and the log as the truth."""

from __future__ import annotations

import asyncio
import collections
import os
from pathlib import Path
from typing import Any

import pytest

from harnessed import RuntimeContext
from harnessed.events import AgentEndEvent, ToolResultEvent
from harnessed.log.record import RecordType, SessionRecord
from harnessed.runtime import SessionRef
from tests.temporal.conftest import Workers, durable_agent, wait_for_file


async def _log(agent: Any, session: str) -> list[SessionRecord]:
    return await agent.session_store.read(SessionRef(agent.name, "default", session))


def _assert_clean(records: list[SessionRecord]) -> None:
    """Every record once: event ids, message ids, tool results per call, one start and one
    end per run."""
    assert len({r.event_id for r in records}) == len(records)
    messages = [r.message for r in records if r.type == RecordType.MESSAGE]
    ids = [m.id for m in messages if m is not None]
    assert len(ids) == len(set(ids)), ids
    answered = collections.Counter(
        b.tool_use_id for m in messages if m is not None for b in m.tool_results
    )
    assert all(n == 1 for n in answered.values()), answered
    calls = {c.id for m in messages if m is not None for c in m.tool_uses}
    assert calls == set(answered)
    for kind in (RecordType.RUN_START, RecordType.RUN_END):
        runs = collections.Counter(r.run_id for r in records if r.type == kind)
        assert all(n == 1 for n in runs.values()), (kind, runs)


async def _turn(agent: Any, text: str, session: str) -> AgentEndEvent:
    ends = []
    async for event in agent.stream_events(text, RuntimeContext(session_id=session)):
        if isinstance(event, AgentEndEvent):
            ends.append(event)
    assert len(ends) == 1
    return ends[0]


async def test_turns_and_tool_calls_run_on_the_workers(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    async with durable_agent() as agent:
        events = [e async for e in agent.stream_events("tool k1", RuntimeContext(session_id="s1"))]
        end = events[-1]
        assert isinstance(end, AgentEndEvent) and end.status == "completed"
        assert end.reply.text == "done: tool k1 effect k1 made"
        assert [e.result.content for e in events if isinstance(e, ToolResultEvent)] == [
            "effect k1 made"
        ]
        second = await _turn(agent, "plain", "s1")
        assert second.reply.text == "done: plain"
        records = await _log(agent, "s1")
        _assert_clean(records)
        history = await agent.conversation.history(SessionRef("durable", "default", "s1"))
        assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"] * 1 + [
            "user",
            "assistant",
        ]
        marks = Path(durable_env["HARNESSED_TEST_MARKS"])
        assert len((marks / "effects-k1").read_text().splitlines()) == 1
        assert int((marks / "effects-k1").read_text()) != os.getpid()  # a worker ran it


async def test_a_worker_killed_during_a_model_request(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    async with durable_agent() as agent:
        turn = asyncio.ensure_future(_turn(agent, "slow-model m1", "s2"))
        pid = int(await wait_for_file(marks / "model-m1"))
        workers.kill(pid)
        end = await asyncio.wait_for(turn, 120)
        assert end.status == "completed"
        assert end.reply.text == "done: slow-model m1"
        records = await _log(agent, "s2")
        _assert_clean(records)
        assistant = [
            r
            for r in records
            if r.type == RecordType.MESSAGE and r.payload["message"]["role"] == "assistant"
        ]
        assert len(assistant) == 1


async def test_a_worker_killed_during_a_tool_call(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    async with durable_agent() as agent:
        turn = asyncio.ensure_future(_turn(agent, "tool hang-t1", "s3"))
        pid = int(await wait_for_file(marks / "effects-hang-t1"))
        workers.kill(pid)
        end = await asyncio.wait_for(turn, 120)
        assert end.status == "completed"
        # the tool ran once; the call is answered as a call its process stopped in
        assert len((marks / "effects-hang-t1").read_text().splitlines()) == 1
        records = await _log(agent, "s3")
        _assert_clean(records)
        results = [b for r in records if (m := r.message) is not None for b in m.tool_results]
        assert len(results) == 1 and results[0].is_error
        assert "stopped" in results[0].content
        # and the session goes on
        after = await _turn(agent, "plain", "s3")
        assert after.reply.text == "done: plain"
        _assert_clean(await _log(agent, "s3"))


async def test_many_turns_over_three_workers_complete_once(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    async with durable_agent() as agent:
        ends = await asyncio.gather(*(_turn(agent, f"tool n{i}", f"many-{i}") for i in range(12)))
        assert all(e.status == "completed" for e in ends)
        marks = Path(durable_env["HARNESSED_TEST_MARKS"])
        pids = set()
        for i in range(12):
            lines = (marks / f"effects-n{i}").read_text().splitlines()
            assert len(lines) == 1
            pids.add(lines[0])
            _assert_clean(await _log(agent, f"many-{i}"))
        assert len(pids) >= 1


async def test_a_second_turn_of_a_running_session_is_refused(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    from harnessed.turns.gate import SessionBusyError

    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    async with durable_agent() as agent:
        turn = asyncio.ensure_future(_turn(agent, "tool hang-busy", "s4"))
        pid = int(await wait_for_file(marks / "effects-hang-busy"))
        with pytest.raises(SessionBusyError):
            await _turn(agent, "plain", "s4")
        workers.kill(pid)
        assert (await asyncio.wait_for(turn, 120)).status == "completed"


async def test_an_interrupt_stops_a_running_tool_and_ends_the_turn_interrupted(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    async with durable_agent() as agent:
        turn = asyncio.ensure_future(_turn(agent, "tool hang-i1", "s5"))
        await wait_for_file(marks / "effects-hang-i1")
        await agent.runtime.interrupt(agent.name, RuntimeContext(session_id="s5"), "enough")
        end = await asyncio.wait_for(turn, 120)
        assert end.status == "interrupted"
        records = await _log(agent, "s5")
        _assert_clean(records)
        (result,) = [b for r in records if (m := r.message) is not None for b in m.tool_results]
        assert result.is_error and "Interrupted" in result.content
        ends = [r.payload for r in records if r.type == RecordType.RUN_END]
        assert ends == [
            {"status": "interrupted", "iterations": 1, "reason": "enough", "pending": []}
        ]
        assert len((marks / "effects-hang-i1").read_text().splitlines()) == 1
        assert (await _turn(agent, "plain", "s5")).reply.text == "done: plain"


async def test_steering_reaches_the_next_model_request(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    async with durable_agent() as agent:
        turn = asyncio.ensure_future(_turn(agent, "tool wait-st", "s6"))
        await wait_for_file(marks / "effects-wait-st")
        steered = await agent.runtime.steer(agent.name, RuntimeContext(session_id="s6"), "plain")
        (marks / "release-wait-st").touch()
        end = await asyncio.wait_for(turn, 120)
        assert end.status == "completed"
        assert end.reply.text == "done: plain"  # the model answered the steering message
        history = await agent.conversation.history(SessionRef("durable", "default", "s6"))
        assert [m.role for m in history] == ["user", "assistant", "tool", "user", "assistant"]
        assert history[3].id == steered.id
        _assert_clean(await _log(agent, "s6"))


async def test_an_unreachable_server_fails_the_call_plainly(tmp_path: Path) -> None:
    from harnessed import HarnessAgent
    from harnessed.models.scripted import ScriptedModel
    from harnessed.temporal import TemporalRuntime, TemporalUnavailableError
    from tests.support.fixtures import free_port

    runtime = TemporalRuntime(f"127.0.0.1:{free_port()}", task_queue="nowhere")
    async with HarnessAgent(
        "offline", ScriptedModel(["hi"]), workspace=tmp_path, memory=False, runtime=runtime
    ) as agent:
        with pytest.raises(TemporalUnavailableError, match="cannot reach"):
            await agent.call("hello")
        records = await agent.session_store.read(SessionRef("offline", "default", "offline"))
        assert records == []  # nothing was started, nothing logged


def test_runtime_configuration_is_checked() -> None:
    from harnessed.temporal import ActivityOptions, TemporalRuntime

    with pytest.raises(ValueError, match="task_queue"):
        TemporalRuntime("127.0.0.1:7233", task_queue="")
    with pytest.raises(ValueError, match="heartbeat_timeout"):
        ActivityOptions(heartbeat_timeout=0)
    with pytest.raises(ValueError, match="retry_max"):
        ActivityOptions(retry_initial=5, retry_max=1)


async def test_a_dev_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    from harnessed.temporal.devserver import DevServer, DevServerError

    with pytest.raises(DevServerError, match="cannot run"):
        await DevServer(tmp_path, binary=str(tmp_path / "no-such-temporal")).start()
    fake = tmp_path / "temporal"
    fake.write_text("#!/bin/sh\necho 'broken install' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(DevServerError, match="broken install"):
        await DevServer(tmp_path, binary=str(fake)).start()


async def test_an_agent_session_steers_a_turn_on_temporal(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    ctx = RuntimeContext(session_id="s7")
    async with durable_agent() as agent:
        session = agent.session(ctx)
        try:
            turn = await session.submit("tool wait-as")
            await wait_for_file(marks / "effects-wait-as")
            steered = session.steer("plain")
            handle = agent.runtime.handle(agent.name, ctx, await agent.runtime.connect())
            while (await handle.query("progress"))["steering"] == 0:
                await asyncio.sleep(0.05)  # until the signal is in the workflow
            (marks / "release-wait-as").touch()
            end = await asyncio.wait_for(turn.result(), 120)
            assert end.status == "completed"
            history = await agent.conversation.history(SessionRef("durable", "default", "s7"))
            assert history[3].id == steered.id
            assert history[-1].text == "done: plain"
            _assert_clean(await _log(agent, "s7"))
        finally:
            await session.close()


async def test_a_failing_model_ends_the_turn_with_its_error_logged_once(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    from harnessed.events import ErrorEvent
    from harnessed.temporal import TurnFailedError

    async with durable_agent() as agent:
        seen = []
        with pytest.raises(TurnFailedError, match="refuses f1") as raised:
            async for event in agent.stream_events("fail f1", RuntimeContext(session_id="s8")):
                seen.append(event)
        assert raised.value.error_type == "ValueError"
        assert isinstance(seen[-1], ErrorEvent)
        records = await _log(agent, "s8")
        _assert_clean(records)
        assert [r.payload["status"] for r in records if r.type == RecordType.RUN_END] == ["error"]
        errors = [r.payload for r in records if r.type == RecordType.ERROR]
        assert [e["error_type"] for e in errors] == ["ValueError"]
        assert (await _turn(agent, "plain", "s8")).reply.text == "done: plain"


async def test_an_agent_session_interrupts_a_turn_on_temporal(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    async with durable_agent() as agent:
        session = agent.session(RuntimeContext(session_id="s9"))
        try:
            turn = await session.submit("tool hang-ai")
            await wait_for_file(marks / "effects-hang-ai")
            session.interrupt()
            end = await asyncio.wait_for(turn.result(), 120)
            assert end.status == "interrupted"
            _assert_clean(await _log(agent, "s9"))
            assert len((marks / "effects-hang-ai").read_text().splitlines()) == 1
        finally:
            await session.close()
