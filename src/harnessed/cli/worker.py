"""``harnessed worker``: run an application's agents' turns from a Temporal task queue.

Start as many as you like on as many machines: they share the queue's work, and when one dies
another continues its turns (``docs/temporal.md``). Needs the ``temporal`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from typing import Any

from rich.console import Console

from harnessed.cli.loading import load_object

__all__ = ["register"]

logger = logging.getLogger(__name__)


def register(sub: Any) -> None:
    worker = sub.add_parser(
        "worker",
        help="run agents' turns from a Temporal task queue (pip install 'harnessed[temporal]')",
        description="Run the turns of agents configured with runtime=TemporalRuntime(...) from "
        "a Temporal task queue. Any number of workers share one queue.",
    )
    worker.add_argument(
        "--agent",
        action="append",
        required=True,
        metavar="MODULE:OBJECT",
        help="a HarnessAgent or a function returning one (repeat for more agents)",
    )
    worker.add_argument(
        "--temporal",
        required=True,
        metavar="HOST:PORT",
        help="the Temporal server's frontend address",
    )
    worker.add_argument("--task-queue", required=True, metavar="QUEUE")
    worker.add_argument("--namespace", default="default", help="(default: %(default)s)")
    worker.add_argument(
        "--max-activities",
        type=_positive,
        default=100,
        metavar="N",
        help="model requests and tool calls running at once on this worker (default: %(default)s)",
    )
    worker.add_argument(
        "--max-workflow-tasks",
        type=_positive,
        default=100,
        metavar="N",
        help="workflow tasks at once on this worker (default: %(default)s)",
    )
    worker.add_argument(
        "--max-per-user",
        type=_positive,
        default=None,
        metavar="N",
        help="model requests and tool calls of one user at once on this worker (default: no limit)",
    )
    worker.add_argument(
        "--channels",
        metavar="FILE",
        help="chat channels (the format of harnessed serve --channels), for sending only: the "
        "reply of a woken turn goes to where its session was last reached",
    )
    worker.set_defaults(handler=_run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _run(args: argparse.Namespace, console: Console) -> int:
    try:
        from harnessed.temporal import run_worker
    except ImportError as exc:
        console.print(
            f"[red]harnessed worker needs the temporal extra[/red] "
            f"(pip install 'harnessed[temporal]'): {exc}"
        )
        return 2
    from harnessed.agent import HarnessAgent
    from harnessed.cli.serve import channels_of
    from harnessed.gateway.channels.outbound import SendingChannels

    agents = []
    for spec in args.agent:
        try:
            agent = load_object(spec)
        except ValueError as exc:
            console.print(f"[red]{exc}[/red]")
            return 2
        if not isinstance(agent, HarnessAgent):
            console.print(f"[red]{spec} is not a HarnessAgent[/red]")
            return 2
        agents.append(agent)
    try:
        channels = channels_of(args, os.environ)
        sending = SendingChannels(agents, channels) if channels else None
    except (ValueError, TypeError, ImportError, OSError) as exc:
        console.print(f"[red]cannot load the channels: {exc}[/red]")
        return 2

    async def work() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            if sending is not None:
                await sending.start()
            await run_worker(
                args.temporal,
                agents,
                args.task_queue,
                namespace=args.namespace,
                stop=stop,
                max_concurrent_activities=args.max_activities,
                max_concurrent_workflow_tasks=args.max_workflow_tasks,
                max_per_user=args.max_per_user,
                on_woken=sending.woken if sending is not None else None,
            )
        finally:
            if sending is not None:
                await sending.close()
            for agent in agents:
                await agent.close()

    sends = f"; woken replies through {', '.join(c.name for c in channels)}" if channels else ""
    console.print(
        f"worker: {', '.join(a.name for a in agents)} on queue {args.task_queue!r} "
        f"at {args.temporal}{sends}",
        highlight=False,
    )
    try:
        asyncio.run(work())
    except (RuntimeError, OSError) as exc:
        console.print(
            f"[red]worker stopped: cannot work with Temporal at {args.temporal}: {exc}[/red]"
        )
        return 1
    return 0
