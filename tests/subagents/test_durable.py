"""Background tasks on a runtime that runs them itself (what the Temporal runtime does),
without Temporal: the spawn hands the task over, a worker runs and delivers it once."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

from harnessed import RuntimeContext
from harnessed.events import Event
from harnessed.messages import Msg
from harnessed.models import ScriptedModel
from harnessed.models.scripted import ScriptedToolCall
from harnessed.run import AgentRun
from harnessed.runtime import SessionRef
from harnessed.subagents import Subagents, SubagentSpec
from tests.subagents.helpers import calls, parent, spawn, tool_results


class Runner:
    """Runs turns in this process (as a worker would) and takes background tasks over."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.started: list[dict[str, Any]] = []
        self.cancelled: list[str] = []

    def stream(
        self, agent: Any, messages: list[Msg], ctx: RuntimeContext, control: Any = None
    ) -> AsyncGenerator[Event, None]:
        return AgentRun(agent, ctx, "park", control).execute(messages)

    async def start_task(
        self, agent: str, user_id: str, session_id: str, record: Mapping[str, Any]
    ) -> None:
        if self.fail:
            raise ConnectionError("cannot reach the Temporal server at nowhere")
        self.started.append({"owner": (agent, user_id, session_id), **record})

    async def cancel_task(self, agent: str, user_id: str, session_id: str, task_id: str) -> None:
        self.cancelled.append(task_id)


def _child() -> tuple[ScriptedModel, list[str]]:
    asked: list[str] = []

    def respond(request: Any) -> str:
        asked.append(request.messages[-1].text)
        return "the answer"

    return ScriptedModel(responder=respond, name="child"), asked


async def test_a_background_spawn_is_handed_to_the_runtime_and_delivered_once(
    tmp_path: Any,
) -> None:
    model, asked = _child()
    runner = Runner()
    boss = parent(
        ScriptedModel([calls(spawn("helper", "find it", timeout_seconds=0)), "started", "again"]),
        SubagentSpec("helper", "Finds things.", model=model),
        workspace=tmp_path,
        runtime=runner,
    )
    ctx = RuntimeContext(session_id="s1")
    async with boss:
        cap = boss.capability(Subagents)
        assert cap is not None
        await boss.call("go", ctx)
        (task,) = runner.started
        assert task["owner"] == ("boss", "default", "s1") and task["task"] == "find it"
        assert asked == []  # nothing ran here
        assert [r.status.value for r in await cap.tasks(ctx)] == ["RUNNING"]

        await boss.call("go on", ctx)  # the next turn makes sure it runs: asked again, same task
        assert [t["task_id"] for t in runner.started] == [task["task_id"]] * 2

        # a worker runs it, and saves the outcome once
        outcome = await cap.run_task("default", "s1", task)
        assert outcome.status == "COMPLETED" and outcome.result == "the answer"
        assert await cap.deliver_task("default", "s1", task, outcome)
        assert not await cap.deliver_task("default", "s1", task, outcome)
        (record,) = await cap.tasks(ctx)
        assert record.status.value == "COMPLETED" and record.result == "the answer"
        log = await boss.session_store.read(SessionRef("boss", "default", "s1"))
        assert [r.payload["task_id"] for r in log if r.type == "subagent/completed"] == [
            task["task_id"]
        ]

        # a retried attempt finds it ended in the sub-agent's log: the model is not asked again
        again = await cap.run_task("default", "s1", task)
        assert again.status == "COMPLETED" and again.result == "the answer"
        assert len(asked) == 1
        child = await boss.session_store.read(SessionRef("boss", "default", record.child_session))
        assert sum(r.type == "subagent/completed" for r in child) == 1


async def test_a_spawn_the_runtime_cannot_start_fails_plainly(tmp_path: Any) -> None:
    model, asked = _child()
    boss = parent(
        ScriptedModel([calls(spawn("helper", "find it", timeout_seconds=0)), "noted"]),
        SubagentSpec("helper", "Finds things.", model=model),
        workspace=tmp_path,
        runtime=Runner(fail=True),
    )
    ctx = RuntimeContext(session_id="s2")
    async with boss:
        await boss.call("go", ctx)
        cap = boss.capability(Subagents)
        assert cap is not None
        (record,) = await cap.tasks(ctx)
        assert record.status.value == "FAILED"
        assert "could not be started: ConnectionError: cannot reach" in (record.error or "")
        request = boss.model.requests[-1]  # type: ignore[attr-defined]
        assert any("could not be started" in r for r in tool_results(request))
        assert asked == []


async def test_task_cancel_asks_the_runtime_to_stop_the_task(tmp_path: Any) -> None:
    model, _ = _child()
    runner = Runner()
    boss = parent(
        ScriptedModel([calls(spawn("helper", "find it", timeout_seconds=0)), "started"]),
        SubagentSpec("helper", "Finds things.", model=model),
        workspace=tmp_path,
        runtime=runner,
    )
    ctx = RuntimeContext(session_id="s3")
    async with boss:
        await boss.call("go", ctx)
        (task,) = runner.started
        boss.model = ScriptedModel(  # type: ignore[misc]
            [calls(ScriptedToolCall("task_cancel", {"task_id": task["task_id"]})), "done"]
        )
        await boss.call("stop it", ctx)
        assert runner.cancelled == [task["task_id"]]
        cap = boss.capability(Subagents)
        assert cap is not None
        (record,) = await cap.tasks(ctx)
        assert record.status.value == "CANCELLED"
