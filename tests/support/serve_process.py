"""``harnessed serve`` as a real subprocess on a free loopback port, and SSE frame reading."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "alice-token-123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

Frame = tuple[str | None, str, dict[str, Any]]
"""(id, event, data) of one SSE frame."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def serve_process(
    env: Mapping[str, str], agent: str = "tests.support.serve_app:agent"
) -> AsyncIterator[str]:
    """Start ``harnessed serve`` with ``env``; yields its base URL once it answers."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "harnessed.cli", "serve", "--agent", agent,
        "--port", str(port), "--token", f"{TOKEN}=alice",
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url) as client:
            while True:  # until it answers (or has died)
                if proc.returncode is not None:
                    assert proc.stderr is not None
                    raise RuntimeError((await proc.stderr.read()).decode()[-3000:])
                try:
                    if (await client.get("/v1/agents", headers=AUTH)).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        yield url
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """The frames of a streaming SSE response as they arrive (comments skipped)."""
    buffer = ""
    async for text in response.aiter_text():
        buffer += text
        while "\n\n" in buffer:
            chunk, buffer = buffer.split("\n\n", 1)
            event_id, event, data = None, "message", []
            for line in chunk.splitlines():
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
            if data:
                yield event_id, event, json.loads("\n".join(data))
