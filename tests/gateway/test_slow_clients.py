"""Slow and greedy clients against the server ``harnessed serve`` runs (uvicorn with the
guarded protocols, on loopback): heads dribbled a byte at a time, silent connections, heads too
large, bodies that never end, more connections than the cap. Other users stay served, the
slow ones are closed, and a turn's event stream outlives every read timeout."""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessed.gateway.guard import GuardedH11Protocol
from harnessed.gateway.limits_server import ServerLimits
from harnessed.gateway.server import server_config
from tests.gateway.helpers import ALICE, Tools, make_agent, make_app, sse
from tests.support.fixtures import free_port, free_socket

BOUND = 120.0  # no scenario here may hang longer than this (a loaded machine is far quicker)
AUTH = b"Authorization: Bearer alice-token-123\r\n"


def _protocols() -> list[Any]:
    # httptools is part of the ``serve`` extra and of ``dev``: a missing one is a failure here
    from harnessed.gateway.guard_httptools import GuardedHttpToolsProtocol

    return [
        pytest.param(GuardedH11Protocol, id="h11"),
        pytest.param(GuardedHttpToolsProtocol, id="httptools"),
    ]


@pytest.fixture(params=_protocols())
def protocol(request: pytest.FixtureRequest) -> Any:
    return request.param


@contextmanager
def guarded_server(app: Any, limits: ServerLimits, protocol: Any) -> Iterator[tuple[str, int]]:
    """The app served as ``harnessed serve`` serves it, in a thread on a free loopback port."""
    import uvicorn

    sock = free_socket()
    config = server_config(app, limits=limits, http=protocol, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        started = threading.Event()
        for _ in range(1000):
            if server.started or not thread.is_alive():
                break
            started.wait(0.01)
        if not server.started:
            raise RuntimeError("uvicorn did not start")
        host, port = sock.getsockname()
        yield host, port
    finally:
        server.should_exit = True
        thread.join(20)
        sock.close()


class SlowClient:
    """A connection that sends ``data`` a byte at a time (``pace`` seconds apart) until the
    server closes it; ``answer`` is everything the server sent before closing."""

    def __init__(self, host: str, port: int, data: bytes, pace: float) -> None:
        self.host, self.port, self.data, self.pace = host, port, data, pace
        self.connected = asyncio.Event()
        self.closed = asyncio.Event()
        self.answer = b""

    async def run(self) -> None:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self.connected.set()
        reading = asyncio.ensure_future(reader.read())
        try:
            for i in range(len(self.data)):
                if reading.done():
                    break
                try:
                    writer.write(self.data[i : i + 1])
                    await writer.drain()
                except ConnectionError:
                    break
                await asyncio.wait([reading], timeout=self.pace)
            try:
                self.answer = await reading
            except ConnectionError:
                self.answer = b""
        finally:
            reading.cancel()
            self.closed.set()
            writer.close()


async def exchange(host: str, port: int, *chunks: bytes) -> bytes:
    """Send ``chunks`` and read until the server closes the connection (failing after
    BOUND when it never does)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        async with asyncio.timeout(BOUND):
            for chunk in chunks:
                writer.write(chunk)
                await writer.drain()
            return await reader.read()
    except ConnectionError:
        return b""
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open for {BOUND} s") from None
    finally:
        writer.close()


async def served(base: str, count: int) -> list[int]:
    """Statuses of ``count`` ordinary requests, each on a connection of its own."""
    statuses = []
    for _ in range(count):
        async with httpx.AsyncClient(base_url=base, timeout=BOUND) as client:
            r = await client.get("/v1/agents", headers=ALICE)
            statuses.append(r.status_code)
    return statuses


async def until(condition: Any, what: str) -> None:
    """Wait for ``condition()`` to hold (checked as the loop runs), failing after BOUND."""
    try:
        async with asyncio.timeout(BOUND):
            while not condition():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"never happened: {what}") from None


def _head(size: int) -> bytes:
    return b"GET /v1/agents HTTP/1.1\r\nHost: x\r\n" + AUTH + b"X-Pad: " + b"a" * size


async def test_slow_heads_are_closed_while_other_users_are_served(
    tmp_path: Path, protocol: Any
) -> None:
    agent = make_agent(tmp_path, Tools())
    limits = ServerLimits(header_timeout=3.0)
    with guarded_server(make_app(agent), limits, protocol) as (host, port):
        slow = [SlowClient(host, port, _head(4000), pace=0.1) for _ in range(300)]
        tasks = [asyncio.create_task(c.run()) for c in slow]
        await until(lambda: all(c.connected.is_set() for c in slow), "300 slow clients connected")
        # other users, while the slow ones hold their connections
        assert await served(f"http://{host}:{port}", 20) == [200] * 20
        await until(lambda: all(c.closed.is_set() for c in slow), "every slow client closed")
        await asyncio.gather(*tasks)
        assert all(c.answer.startswith(b"HTTP/1.1 408 ") for c in slow), {
            c.answer[:40] for c in slow
        }
        # a connection that sends nothing at all is closed too
        assert (await exchange(host, port)).startswith(b"HTTP/1.1 408 ")
        assert await served(f"http://{host}:{port}", 3) == [200] * 3


async def test_connections_over_the_cap_replace_the_slow_ones(
    tmp_path: Path, protocol: Any
) -> None:
    agent = make_agent(tmp_path, Tools())
    cap = 40
    limits = ServerLimits(header_timeout=600.0, max_connections=cap)  # only the cap acts
    with guarded_server(make_app(agent), limits, protocol) as (host, port):
        slow = [SlowClient(host, port, _head(20_000), pace=0.2) for _ in range(300)]
        tasks = [asyncio.create_task(c.run()) for c in slow]
        await until(lambda: all(c.connected.is_set() for c in slow), "300 slow clients connected")
        await until(
            lambda: sum(not c.closed.is_set() for c in slow) <= cap,
            f"at most {cap} slow clients left open",
        )
        assert await served(f"http://{host}:{port}", 20) == [200] * 20
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_full_server_refuses_new_connections_at_once(tmp_path: Path, protocol: Any) -> None:
    tools = Tools()
    agent = make_agent(tmp_path, tools)
    limits = ServerLimits(max_connections=3)
    base_headers = {**ALICE, "Content-Type": "application/json"}
    with guarded_server(make_app(agent), limits, protocol) as (host, port):
        base = f"http://{host}:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=BOUND) as setup:
            ids = []
            for _ in range(3):
                r = await setup.post("/v1/sessions", json={}, headers=ALICE)
                ids.append(r.json()["session_id"])
        clients = [httpx.AsyncClient(base_url=base, timeout=BOUND) for _ in range(3)]
        streams = []
        try:
            for client, sid in zip(clients, ids, strict=True):
                stream = client.stream(
                    "POST",
                    f"/v1/sessions/{sid}/messages",
                    json={"text": "wait"},
                    headers=base_headers,
                )
                response = await stream.__aenter__()
                assert response.status_code == 200
                streams.append((stream, response))
            await until(tools.started.is_set, "the turns are running")
            # three connections, each serving a turn: the fourth is refused with 503
            answer = await exchange(
                host, port, b"GET /v1/agents HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\n"
            )
            assert answer.startswith(b"HTTP/1.1 503 "), answer[:80]
            assert b"too many open connections" in answer
            tools.release.set()
            for _, response in streams:
                body = b"".join([chunk async for chunk in response.aiter_bytes()])
                assert sse(body.decode())[-1][1]["status"] == "completed"
        finally:
            tools.release.set()
            for stream, _ in streams:
                await stream.__aexit__(None, None, None)
            for client in clients:
                await client.aclose()
        assert await served(base, 3) == [200] * 3


async def test_a_head_over_the_limit_gets_431(tmp_path: Path, protocol: Any) -> None:
    agent = make_agent(tmp_path, Tools())
    with guarded_server(make_app(agent), ServerLimits(), protocol) as (host, port):
        big = _head(100_000) + b"\r\n\r\n"
        answer = await exchange(host, port, big)  # in one piece
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
        assert b"larger than the limit of 16384 bytes" in answer
        pieces = [big[i : i + 1000] for i in range(0, len(big), 1000)]
        assert (await exchange(host, port, *pieces)).startswith(b"HTTP/1.1 431 ")
        # a head just under the limit is fine, and so is one after a kept-alive request
        fine = _head(16_000) + b"\r\n\r\n"
        answer = await exchange(
            host, port, fine, fine.replace(b"\r\nX-Pad", b"\r\nConnection: close\r\nX-Pad")
        )
        assert answer.count(b"HTTP/1.1 200 ") == 2, answer[:200]


async def test_a_slow_body_is_timed_out(tmp_path: Path, protocol: Any) -> None:
    agent = make_agent(tmp_path, Tools())
    limits = ServerLimits(body_timeout=1.0)
    with guarded_server(make_app(agent), limits, protocol) as (host, port):
        base = f"http://{host}:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=BOUND) as client:
            sid = (await client.post("/v1/sessions", json={}, headers=ALICE)).json()["session_id"]
        body = b'{"text": "hello there, this body never ends"}'
        head = (
            f"POST /v1/sessions/{sid}/messages HTTP/1.1\r\nHost: x\r\n".encode()
            + AUTH
            + b"Content-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        slow = SlowClient(host, port, head + body[:10], pace=0.005)
        await asyncio.wait_for(slow.run(), BOUND)
        assert slow.answer.startswith(b"HTTP/1.1 408 "), slow.answer[:80]
        assert b"request body did not arrive in time" in slow.answer
        # no turn ran on half a message
        async with httpx.AsyncClient(base_url=base, timeout=BOUND) as client:
            r = await client.get(f"/v1/sessions/{sid}/messages", headers=ALICE)
            assert r.json()["messages"] == []


async def test_a_body_answered_before_it_ended_does_not_hold_the_connection(
    tmp_path: Path, protocol: Any
) -> None:
    """A 2 MB chunked body gets 413 after its first megabyte; once the rest is drained the
    connection is idle and closes after the keep-alive timeout (uvicorn alone kept it open
    for ever)."""
    agent = make_agent(tmp_path, Tools())
    limits = ServerLimits(keep_alive_timeout=1.0)
    with guarded_server(make_app(agent), limits, protocol) as (host, port):
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}", timeout=BOUND) as c:
            sid = (await c.post("/v1/sessions", json={}, headers=ALICE)).json()["session_id"]
        chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"
        answer = await exchange(
            host,
            port,
            f"POST /v1/sessions/{sid}/messages HTTP/1.1\r\nHost: x\r\n".encode()
            + AUTH
            + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            chunk * 32 + b"0\r\n\r\n",
        )
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:80]


async def test_a_turn_streams_for_longer_than_every_read_timeout(
    tmp_path: Path, protocol: Any
) -> None:
    tools = Tools()
    agent = make_agent(tmp_path, tools)
    limits = ServerLimits(header_timeout=0.5, body_timeout=0.5, keep_alive_timeout=0.5)
    with guarded_server(make_app(agent), limits, protocol) as (host, port):
        base = f"http://{host}:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=BOUND) as client:
            sid = (await client.post("/v1/sessions", json={}, headers=ALICE)).json()["session_id"]
            async with client.stream(
                "POST", f"/v1/sessions/{sid}/messages", json={"text": "wait a while"}, headers=ALICE
            ) as response:
                assert response.status_code == 200
                await until(tools.started.is_set, "the turn is in its tool")
                # a head timeout and a body timeout pass (their 408s say so) while it streams
                assert (await exchange(host, port)).startswith(b"HTTP/1.1 408 ")
                partial = (
                    b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\n"
                    + AUTH
                    + b"Content-Type: application/json\r\nContent-Length: 9\r\n\r\n{}"
                )
                assert (await exchange(host, port, partial)).startswith(b"HTTP/1.1 408 ")
                tools.release.set()
                body = b"".join([chunk async for chunk in response.aiter_bytes()])
        events = sse(body.decode())
        assert events[-1][0] == "agent_end" and events[-1][1]["status"] == "completed"
        assert any(e == "tool_result" for e, _ in events)


async def test_harnessed_serve_outlasts_more_slow_clients_than_it_has_descriptors(
    tmp_path: Path,
) -> None:
    """The real command in a process of its own, its open-file limit far below the number of
    slow clients (the head timeout long, so only the cap acts): it keeps serving."""
    root = Path(__file__).resolve().parents[2]
    port = free_port()
    open_files = 384  # 256 stay reserved: at most 128 connections

    def low_file_limit() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, hard))

    code = "import sys; from harnessed.cli import main; sys.exit(main(sys.argv[1:]))"
    args = ["serve", "--agent", "tests.cli.chat_app:make_agent", "--port", str(port)]
    args += ["--token", "alice-token-123=alice", "--header-timeout", "600"]
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    env["CHAT_TEST_WORKSPACE"] = str(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=low_file_limit,
    )
    base = f"http://127.0.0.1:{port}"
    tasks: list[asyncio.Task[None]] = []
    try:
        async with httpx.AsyncClient(base_url=base, timeout=BOUND) as client:

            async def up() -> bool:
                try:
                    return (await client.get("/v1/agents", headers=ALICE)).status_code == 200
                except httpx.TransportError:
                    return False

            async with asyncio.timeout(BOUND):
                while not await up():
                    assert proc.poll() is None, "harnessed serve exited"
                    await asyncio.sleep(0.05)
        slow = [SlowClient("127.0.0.1", port, _head(20_000), pace=0.2) for _ in range(400)]
        tasks = [asyncio.create_task(c.run()) for c in slow]
        await until(lambda: all(c.connected.is_set() for c in slow), "400 slow clients connected")
        await until(
            lambda: sum(not c.closed.is_set() for c in slow) <= open_files - 256,
            "the slow clients beyond the connection cap closed",
        )
        assert await served(base, 20) == [200] * 20
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        proc.terminate()
        proc.wait(20)


def test_limits_are_validated_and_fit_the_open_file_limit() -> None:
    with pytest.raises(ValueError, match="header_timeout"):
        ServerLimits(header_timeout=0)
    with pytest.raises(ValueError, match="body_timeout"):
        ServerLimits(body_timeout=float("inf"))
    with pytest.raises(TypeError, match="max_connections"):
        ServerLimits(max_connections=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_header_bytes"):
        ServerLimits(max_header_bytes=10)
    limits = ServerLimits(max_connections=1000, reserved_fds=256)
    assert limits.connection_cap(open_file_limit=1024) == 768
    assert limits.connection_cap(open_file_limit=100_000) == 1000
    with pytest.raises(ValueError, match="open-file limit"):
        limits.connection_cap(open_file_limit=200)


def test_serve_flags_become_the_limits() -> None:
    import argparse

    from harnessed.cli import serve as serve_cli

    parser = argparse.ArgumentParser()
    serve_cli.register(parser.add_subparsers())
    args = parser.parse_args(["serve", "--agent", "m:a"])
    assert serve_cli.server_limits(args) == ServerLimits()
    args = parser.parse_args(
        ["serve", "--agent", "m:a", "--header-timeout", "2.5", "--body-timeout", "7",
         "--keep-alive-timeout", "4", "--max-connections", "64", "--max-header-bytes", "8192"]
    )  # fmt: skip
    assert serve_cli.server_limits(args) == ServerLimits(
        header_timeout=2.5,
        body_timeout=7,
        keep_alive_timeout=4,
        max_connections=64,
        max_header_bytes=8192,
    )
