"""The HTTP channel under load: many concurrent SSE conversations against one server process.

A server process (uvicorn, one worker) serves a HarnessAgent with a scripted model (a short
reply streamed in pieces, a little model latency) and the default durable stores of a local
workspace (JSONL session logs + SQLite search index, JSON state files, lease files of the turn
gate). The client opens ``--conversations`` sessions, then sends one message in each, all at
once, ``--turns`` times in a row, reading every stream to its end. Measured per turn from the
moment the request is sent:

* first event: the first SSE frame (``turn``: the turn is accepted and queued). Inside the
  server the moment that frame is written is measured twice: "written, from app" counts from
  the app being called with the request, "written, from send" from the client sending it
  (its clock travels in a header). The client's first event minus "from send" is the time
  the client took to read the frame; "from send" minus "from app" the time the request waited
  for the server's event loop to read it;
* first agent event: ``agent_start`` (the run holds its session and loaded its state);
* first text: the first ``text_delta``;
* turn: the whole stream until ``agent_end``.

The client keeps one HTTP/1.1 connection per conversation and speaks the protocol itself (a
general-purpose client costs more CPU than the server on a small machine, which would measure
the client).

For reference the table starts with "baseline GET": the same number of concurrent requests
to ``GET /v1/sessions/{id}`` (authenticated, no turn) — the floor the machine, uvicorn and
the client set at this concurrency.

Target: p99 of the first event ≤ 100 ms with 200 conversations, 0 errors.

    python benchmarks/gateway.py [--conversations 200] [--turns 3] [--model-latency 0.05]
                                 [--max-running-turns 0] [--profile FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

TOKEN = "benchmark-token-1"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def make_app() -> object:
    """The served app (run inside the server process)."""
    from harnessed import HarnessAgent
    from harnessed.gateway import BearerAuth, Gateway, create_app
    from harnessed.models import ModelRequest
    from harnessed.models.scripted import ScriptedModel

    latency = float(os.environ["BENCH_MODEL_LATENCY"])

    async def reply(request: ModelRequest) -> str:
        await asyncio.sleep(latency)
        return f"Noted: {request.messages[-1].text}. Here is a short streamed answer for you."

    agent = HarnessAgent(
        "bench",
        ScriptedModel(responder=reply, chunk_size=8),
        workspace=os.environ["BENCH_WORKSPACE"],
        shell=False,
    )
    running = int(os.environ["BENCH_RUNNING_TURNS"])
    gateway = Gateway(agent, max_running_turns=running if running > 0 else None)
    app = create_app(gateway, BearerAuth({TOKEN: "bench-user"}))
    return ServerClock(app, Path(os.environ["BENCH_WORKSPACE"]) / "server-first-event.txt")


class ServerClock:
    """ASGI wrapper: per message request, when the server wrote its first SSE frame, measured
    from the app being called and from the client sending the request (the client's wall
    clock travels in ``X-Sent-At``; one machine, one clock). Written to a file at shutdown,
    to tell where the time goes: waiting for the server's loop to read the request, the
    app, or the client reading the answer."""

    def __init__(self, app: Any, out: Path) -> None:
        self.app = app
        self.out = out
        self.times: list[tuple[float, float]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":

            async def lifespan_send(message: Any) -> None:
                if message["type"] == "lifespan.shutdown.complete":
                    self.out.write_text("\n".join(f"{a:.3f} {b:.3f}" for a, b in self.times))
                await send(message)

            await self.app(scope, receive, lifespan_send)
            return
        if not (scope["type"] == "http" and scope["path"].endswith("/messages")):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        sent = float(dict(scope["headers"]).get(b"x-sent-at", b"nan"))
        first = True

        async def timed_send(message: Any) -> None:
            nonlocal first
            if first and message["type"] == "http.response.body" and message.get("body"):
                first = False
                written = (time.perf_counter() - started, time.time() - sent)
                self.times.append((written[0] * 1000, written[1] * 1000))
            await send(message)

        await self.app(scope, receive, timed_send)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


class Connection:
    """One keep-alive HTTP/1.1 connection speaking just enough of the protocol for this
    benchmark: a light client, so the numbers are the server's and not the client's."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        return cls(*await asyncio.open_connection(host, port))

    def send(self, method: str, path: str, body: bytes = b"") -> None:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"X-Sent-At: {time.time():.6f}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)

    async def head(self) -> tuple[int, dict[str, str]]:
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers

    async def chunks(self, headers: dict[str, str]) -> Any:
        """The body's pieces as they arrive (chunked or Content-Length)."""
        if headers.get("transfer-encoding") != "chunked":
            yield await self.reader.readexactly(int(headers.get("content-length", "0")))
            return
        while True:
            size = int((await self.reader.readline()).split(b";")[0], 16)
            data = await self.reader.readexactly(size + 2)
            if size == 0:
                return
            yield data[:-2]


async def conversation_turn(
    conn: Connection, sid: str, text: str, out: dict[str, list[float]]
) -> None:
    started = time.perf_counter()
    marks: dict[str, float] = {}
    conn.send("POST", f"/v1/sessions/{sid}/messages", json.dumps({"text": text}).encode())
    status, headers = await conn.head()
    if status != 200:
        raise RuntimeError(f"HTTP {status}")
    buffer = b""
    async for piece in conn.chunks(headers):
        now = (time.perf_counter() - started) * 1000
        buffer += piece
        while b"\n\n" in buffer:
            frame, buffer = buffer.split(b"\n\n", 1)
            kind = next(
                (x[7:].decode() for x in frame.split(b"\n") if x.startswith(b"event: ")), ""
            )
            if not kind:
                continue
            marks.setdefault("first event", now)
            if kind == "agent_start":
                marks.setdefault("first agent event", now)
            elif kind == "text_delta":
                marks.setdefault("first text", now)
            elif kind == "error":
                raise RuntimeError("error event")
            elif kind == "agent_end":
                marks["turn"] = now
    if "turn" not in marks:
        raise RuntimeError("stream ended without agent_end")
    for name, value in marks.items():
        out[name].append(value)


async def run_client(
    host: str, port: int, conversations: int, turns: int
) -> tuple[dict[str, list[float]], int]:
    out: dict[str, list[float]] = {
        "baseline GET": [],
        "first event": [],
        "first agent event": [],
        "first text": [],
        "turn": [],
    }
    errors = 0
    conns = [await Connection.open(host, port) for _ in range(conversations)]
    sids = [f"c{i}" for i in range(conversations)]
    for conn, sid in zip(conns, sids, strict=True):
        conn.send("POST", "/v1/sessions", json.dumps({"session_id": sid}).encode())
        status, headers = await conn.head()
        async for _ in conn.chunks(headers):
            pass
        if status not in (200, 201):
            raise RuntimeError(f"cannot create session {sid}: HTTP {status}")

    async def baseline(conn: Connection, sid: str) -> None:
        started = time.perf_counter()
        conn.send("GET", f"/v1/sessions/{sid}")
        status, headers = await conn.head()
        async for _ in conn.chunks(headers):
            pass
        if status != 200:
            raise RuntimeError(f"HTTP {status}")
        out["baseline GET"].append((time.perf_counter() - started) * 1000)

    for _ in range(turns):  # the floor this machine and HTTP stack set at this concurrency
        await asyncio.gather(*(baseline(c, s) for c, s in zip(conns, sids, strict=True)))
    for turn in range(turns):
        results = await asyncio.gather(
            *(
                conversation_turn(c, s, f"message {turn}", out)
                for c, s in zip(conns, sids, strict=True)
            ),
            return_exceptions=True,
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        errors += len(failed)
        if failed:
            print(f"  turn {turn}: {len(failed)} errors, e.g. {failed[0]!r}", flush=True)
    for conn in conns:
        conn.writer.close()
    return out, errors


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--model-latency", type=float, default=0.05)
    parser.add_argument(
        "--max-running-turns", type=int, default=0, help="the gateway's limit (0: none)"
    )
    parser.add_argument(
        "--loop", default="auto", help="uvicorn's event loop: auto, asyncio, uvloop"
    )
    parser.add_argument(
        "--http", default="auto", help="uvicorn's HTTP parser: auto, h11, httptools"
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="record the server process with py-spy (pip install py-spy) into FILE "
        "(collapsed stacks, idle threads left out)",
    )
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="harnessed-gateway-bench-") as workspace:
        port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root / 'benchmarks'}",
            "BENCH_WORKSPACE": workspace,
            "BENCH_MODEL_LATENCY": str(args.model_latency),
            "BENCH_RUNNING_TURNS": str(args.max_running_turns),
        }
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "gateway:make_app",
                "--port",
                str(port),
                "--log-level",
                "warning",
                "--backlog",
                "4096",
                "--timeout-keep-alive",
                "60",
                "--loop",
                args.loop,
                "--http",
                args.http,
            ],
            env=env,
            cwd=root / "benchmarks",
        )
        url = f"http://127.0.0.1:{port}"
        profiler = None
        if args.profile:  # sampling stops when the server exits
            record = ["py-spy", "record", "-r", "250", "-f", "raw", "-o", args.profile]
            profiler = subprocess.Popen([*record, "-p", str(server.pid)])
        try:
            for _ in range(400):
                try:
                    httpx.get(f"{url}/openapi.json")
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            print(
                f"{args.conversations} concurrent SSE conversations x {args.turns} turns, "
                f"one server process, model latency {args.model_latency * 1000:.0f} ms, "
                f"at most {args.max_running_turns or 'all'} turns running, "
                f"uvicorn loop {args.loop}, http {args.http}, "
                f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            out, errors = asyncio.run(run_client("127.0.0.1", port, args.conversations, args.turns))
        finally:
            server.terminate()
            server.wait(30)
            if profiler is not None:
                profiler.wait(60)
        clock = Path(workspace) / "server-first-event.txt"
        if clock.exists() and clock.read_text().strip():
            rows = [line.split() for line in clock.read_text().splitlines()]
            out["  written, from app"] = [float(a) for a, _ in rows]
            out["  written, from send"] = [float(b) for _, b in rows]
    print()
    print(f"{'measure':<20}{'n':>6}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    print("-" * 66)
    for name, values in out.items():
        median = statistics.median(values) if values else float("nan")
        print(
            f"{name:<20}{len(values):>6}{median:>10.1f}"
            f"{percentile(values, 90):>10.1f}{percentile(values, 99):>10.1f}"
            f"{max(values) if values else float('nan'):>10.1f}"
        )
    print(f"\nerrors: {errors}")


if __name__ == "__main__":
    main()
