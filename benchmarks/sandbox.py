"""What does the sandbox add to a command? ``execute("true")`` in bubblewrap vs on the host.

Prints a table of the median and 95th percentile wall time of one ``execute`` tool call, and the
CPU time it costs (the agent plus every process it started: less sensitive to a busy machine
than wall time), measured the
way a user runs it: a real ``HarnessAgent`` with a local workspace whose scripted model asks for
``true`` over and over (one call makes ROUNDS tool calls, timed by the tool result events),
with ``HostSandbox()`` and with the default ``BubblewrapSandbox()`` *interleaved*: BLOCKS
alternating blocks of each, so both see the same machine load (this box is shared and busy).
The difference of the medians is the sandbox's overhead per command (target: at most 20 ms).
A last table times harnessed's own per-command preparation (the view's mount arguments, the
system arguments, the pids cgroup made and removed, the workspace guard before and after a
command over a tree of GUARD_FILES files) to show what is harnessed's and what is ``bwrap``
and the kernel making namespaces.

    python benchmarks/sandbox.py
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext, ToolCallEvent, ToolResultEvent
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.sandbox import BubblewrapSandbox, HostSandbox, Sandbox
from harnessed.sandbox.bubblewrap import BubblewrapSession
from harnessed.sandbox.limits import PidsCgroup
from harnessed.workspace import Workspace
from harnessed.workspace.view import ViewPolicy

ROUNDS = 20
BLOCKS = 10
GUARD_FILES = 1_000


def cpu_ms() -> float:
    """CPU time used so far by this process and its finished children (ms)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000


async def measure(sandbox: Sandbox, root: Path) -> tuple[list[float], float]:
    steps = [
        ScriptedResponse(tool_calls=[ScriptedToolCall("execute", {"command": "true"})])
        for _ in range(ROUNDS + 1)
    ]
    agent = HarnessAgent(
        "bench",
        ScriptedModel([*steps, "done"]),
        workspace=root,
        shell=sandbox,
        max_iters=ROUNDS + 2,
        memory=False,
        compaction=None,
    )
    times: list[float] = []
    started = 0.0
    cpu_before = cpu_ms()
    async for event in agent.stream_events("go", RuntimeContext("u", "s")):
        if isinstance(event, ToolCallEvent):
            started = time.perf_counter()
        elif isinstance(event, ToolResultEvent):
            assert "[exit code 0]" in event.result.content, event.result.content
            times.append((time.perf_counter() - started) * 1000)
    cpu_per_call = (cpu_ms() - cpu_before) / len(times)
    await agent.close()
    return times[1:], cpu_per_call  # the first call also acquires the sandbox


def row(name: str, times: list[float], cpus: list[float]) -> tuple[str, float, float, float]:
    ordered = sorted(times)
    return (
        name,
        statistics.median(ordered),
        ordered[int(len(ordered) * 0.95) - 1],
        (statistics.median(cpus)),
    )


def preparation_ms(bwrap: BubblewrapSandbox, root: Path) -> list[tuple[str, float]]:
    """Median ms of each piece of harnessed's own per-command work before ``bwrap`` starts."""
    workspace = Workspace(root)
    policy = ViewPolicy.for_caller(workspace, "bench", "u", "s")
    session = BubblewrapSession(bwrap, root, policy, bound=True)

    def cgroup() -> None:
        if bwrap._cgroups is not None:
            PidsCgroup(bwrap._cgroups, bwrap.limits.max_processes).close()

    def timed(fn: Callable[[], object]) -> float:
        runs = []
        for _ in range(200):
            start = time.perf_counter()
            fn()
            runs.append((time.perf_counter() - start) * 1000)
        return statistics.median(runs)

    tree = root / "tree"
    for d in range(GUARD_FILES // 50):
        (tree / f"d{d}").mkdir(parents=True, exist_ok=True)
        for f in range(50):
            (tree / f"d{d}" / f"f{f}.txt").write_text("x" * 100)
    guard = session._guard
    guard.before()  # the first one hands every file to the sandbox user
    time.sleep(2.1)  # directories read before they settle are read again
    guard.after()
    return [
        ("view mount arguments", timed(session._workspace_args)),
        ("system arguments", timed(bwrap.system_args)),
        ("pids cgroup make + remove", timed(cgroup)),
        (f"guard before ({GUARD_FILES:,} files)", timed(guard.before)),
        (f"guard after ({GUARD_FILES:,} files)", timed(lambda: guard.after())),
    ]


async def main() -> int:
    bwrap = BubblewrapSandbox()
    reason = bwrap.unavailable_reason()
    if reason is not None:
        print(f"bubblewrap is not usable here: {reason}")
        return 1
    runs: dict[str, tuple[list[float], list[float]]] = {"host": ([], []), "bwrap": ([], [])}
    with tempfile.TemporaryDirectory() as tmp:
        for block in range(BLOCKS):
            for name, sandbox in (("host", HostSandbox()), ("bwrap", bwrap)):
                times, cpu = await measure(sandbox, Path(tmp, f"{name}-{block}"))
                runs[name][0].extend(times)
                runs[name][1].append(cpu)
        steps = preparation_ms(bwrap, Path(tmp, "bwrap-0"))
    host = row("host (HostSandbox)", *runs["host"])
    boxed = row("bubblewrap", *runs["bwrap"])
    print(
        f"execute('true') through HarnessAgent, {BLOCKS} interleaved blocks of {ROUNDS} calls "
        "per backend\n"
    )
    print(f"{'backend':<22}{'median ms':>12}{'p95 ms':>10}{'CPU ms/call':>14}")
    for name, median, p95, cpu in (host, boxed):
        print(f"{name:<22}{median:>12.1f}{p95:>10.1f}{cpu:>14.1f}")
    added = boxed[1] - host[1]
    print(f"\nadded by the sandbox (median): {added:.1f} ms (target <= 20 ms)")
    print(f"CPU added per command (agent + every process it started): {boxed[3] - host[3]:.1f} ms")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"process limit enforced by: {bwrap.process_limit}")
    print(f"commands run as host uid: {bwrap.host_user}")
    print(f"\n{'harnessed per-command work':<30}{'median ms':>12}")
    for name, ms in steps:
        print(f"{name:<30}{ms:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
