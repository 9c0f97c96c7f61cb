"""Record the histories ``test_replay.py`` replays (run again only when a workflow changed
on purpose, in a way that old histories need not replay):

    PYTHONPATH=src:. python -m tests.temporal.record_histories [NAME ...]

It starts a dev server and a worker in this process with the test agent, runs a turn with a
tool call, a background sub-agent task and a wake-up, and writes each workflow's history to
``tests/temporal/histories/<name>.json`` (only the NAMEs given, when some are). The wake-up's
is ``wakeup-hooks``; ``wakeup.json`` is one from before the wake-up workflow called the
``on_woken`` hooks, kept so that runs of that time go on replaying (never rewritten).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent / "histories"


async def main(names: list[str]) -> None:
    from harnessed import RuntimeContext
    from harnessed.subagents import Subagents
    from harnessed.temporal import make_worker, workflow_id
    from harnessed.temporal.devserver import DevServer
    from harnessed.temporal.tasks import task_workflow_id
    from harnessed.temporal.wakeups import wakeup_workflow_id
    from harnessed.wakeups import Wakeups

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in ("ws", "marks"):
            (root / name).mkdir()
        async with DevServer(root / "server") as server:
            os.environ.update(
                HARNESSED_TEST_WORKSPACE=str(root / "ws"),
                HARNESSED_TEST_MARKS=str(root / "marks"),
                HARNESSED_TEST_TEMPORAL=server.address,
                HARNESSED_TEST_QUEUE="record",
            )
            from tests.support.temporal_app import make_agent

            agent, served = make_agent(), make_agent()
            client = await agent.runtime.connect()
            async with make_worker(client, [served], "record"):
                await agent.call("tool r1", RuntimeContext(session_id="turn"))
                turn = client.get_workflow_handle(workflow_id(agent.name, "default", "turn"))
                await agent.call("spawn r2", RuntimeContext(session_id="task"))
                subagents = agent.capability(Subagents)
                assert subagents is not None
                (record,) = await subagents.tasks(RuntimeContext(session_id="task"))
                task = client.get_workflow_handle(
                    task_workflow_id(agent.name, "default", "task", record.task_id)
                )
                await task.result()
                await agent.call("wake r3", RuntimeContext(session_id="wake"))
                wakeups = agent.capability(Wakeups)
                assert wakeups is not None
                (pending,) = await wakeups.pending(RuntimeContext(session_id="wake"))
                wake = client.get_workflow_handle(
                    wakeup_workflow_id(agent.name, "default", "wake", pending.id)
                )
                await wake.result()
                for name, handle in (("turn", turn), ("task", task), ("wakeup-hooks", wake)):
                    if names and name not in names:
                        continue
                    fetched = await handle.fetch_history()
                    (HERE / f"{name}.json").write_text(fetched.to_json())
            await agent.close()
            await served.close()


if __name__ == "__main__":
    import sys

    asyncio.run(main(sys.argv[1:]))
