"""What do the task list, plan/permission checks and confirmations cost per step?

Prints three tables:

1. the superseded-receipts view (run before every request when ``enable_task_list=True``)
   and a warm request preparation with it, by history length, with a ``todo_write`` call
   every 20 messages;
2. deciding one step of 5 tool calls, by number of permission rules;
3. the latency of a confirmation round trip: from ``agent.respond`` to the tool running in a
   waiting ``stream_events`` call.

    python benchmarks/task_state_overhead.py
"""

from __future__ import annotations

import asyncio
import statistics
import time

from harnessed import HarnessAgent, RuntimeContext, TodoItem, tool
from harnessed.context import ContextCompiler, PrepareInfo
from harnessed.events import ConfirmationRequestEvent, ToolResultEvent
from harnessed.messages import Msg, ToolUseBlock
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.permissions import ApprovalGate, PermissionRule
from harnessed.runtime import SessionRef
from harnessed.state import AgentState
from harnessed.todos import TODOS
from harnessed.todos.receipts import SupersededTodoReceipts
from harnessed.tools import Toolkit

SIZES = (100, 1_000, 10_000)
ROUNDS = 20


def history(n: int) -> list[Msg]:
    out: list[Msg] = [Msg.user("Please fix the failing tests.")]
    while len(out) < n - 1:
        i = len(out)
        if i % 20 == 1:
            todos = [{"content": f"step {k} of the fix", "status": "pending"} for k in range(6)]
            out.append(Msg.assistant([ToolUseBlock(f"c{i}", "todo_write", {"todos": todos})]))
            out.append(
                Msg.tool_result(
                    f"c{i}",
                    "Task list saved (task state revision 3): 6 items — 0 completed, 0 in "
                    "progress, 6 pending; ids t1, t2, t3, t4, t5, t6. The current list is "
                    "shown in TASK_STATE.",
                    name="todo_write",
                )
            )
        else:
            out.append(Msg.assistant([ToolUseBlock(f"c{i}", "read_file", {"path": f"m{i}.py"})]))
            out.append(Msg.tool_result(f"c{i}", "def f():\n    return 42\n" * 8, name="read_file"))
    return out


async def view_and_prepare(n: int) -> tuple[float, float, float]:
    state = AgentState.new(SessionRef("bench", "u", "s"))
    state.replace_history(history(n))
    state.put(TODOS, tuple(TodoItem(f"t{k}", f"step {k} of the fix") for k in range(6)))
    view = SupersededTodoReceipts()
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        view(state.history, state)
        times.append(time.perf_counter() - started)
    model = ScriptedModel(context_window=50_000_000)
    ctx = RuntimeContext("u", "s", "r")
    results = []
    for views in ((), (view,)):
        compiler = ContextCompiler(sys_prompt="You fix bugs.", views=views)
        warm = []
        for i in range(ROUNDS + 1):
            state.append(Msg.user(f"step {i}"))
            info = PrepareInfo("bench", ctx, model, f"mc{i}", i, run_cache={})
            started = time.perf_counter()
            await compiler(state, ModelRequest(messages=()), info)
            if i:
                warm.append(time.perf_counter() - started)
        results.append(statistics.median(warm) * 1000)
    return statistics.median(times) * 1000, results[0], results[1]


@tool
def deploy(target: str) -> str:
    """Deploy."""
    return target


@tool(read_only=True)
def status() -> str:
    """Status."""
    return "green"


async def review_cost(rules: int) -> float:
    toolkit = Toolkit([deploy, status])
    gate = ApprovalGate(
        toolkit,
        mode="bypass",
        rules=[PermissionRule.deny("deploy", target=f"region-{i}-*") for i in range(rules)],
    )
    state = AgentState.new(SessionRef("bench", "u", "s"))
    calls = [ToolUseBlock(f"c{i}", "deploy", {"target": "eu-west"}) for i in range(4)]
    calls.append(ToolUseBlock("s", "status", {}))
    times = []
    for _ in range(ROUNDS * 5):
        started = time.perf_counter()
        await gate.review(calls, state)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1_000_000


async def round_trip() -> float:
    latencies = []
    for _ in range(ROUNDS):
        model = ScriptedModel(
            [ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": "x"})]), "ok"]
        )
        agent = HarnessAgent("bench", model, tools=[deploy], permission_mode="default")
        ctx = RuntimeContext("u", "s")
        answered = 0.0
        async for event in agent.stream_events("go", ctx):
            if isinstance(event, ConfirmationRequestEvent):
                answered = time.perf_counter()
                await agent.respond(ctx, event.request_id, True)
            elif isinstance(event, ToolResultEvent):
                latencies.append(time.perf_counter() - answered)
    return statistics.median(latencies) * 1000


async def main() -> None:
    print(f"{'messages':>9} | {'view ms':>8} | {'prepare ms':>10} | {'prepare+view ms':>15}")
    print("-" * 52)
    for n in SIZES:
        view, plain, with_view = await view_and_prepare(n)
        print(f"{n:>9,} | {view:>8.3f} | {plain:>10.3f} | {with_view:>15.3f}")
    print(
        f"\nmedians of {ROUNDS}; a todo_write call every 20 messages (all but the last superseded)"
    )

    print(f"\n{'rules':>6} | {'review µs (5 calls)':>20}")
    print("-" * 30)
    for rules in (0, 10, 100, 1_000):
        print(f"{rules:>6,} | {await review_cost(rules):>20.1f}")

    print(f"\nconfirmation round trip (respond → tool result): {await round_trip():.3f} ms median")


if __name__ == "__main__":
    asyncio.run(main())
