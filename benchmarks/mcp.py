"""What does a tool served over MCP cost, compared with the same tool in-process?

Prints one table: for a local ``@tool``, the same tool on an MCP server over stdio, and over
streamable HTTP (the server is built with the SDK's ``MCPServer``; this script starts itself
as that server in a child process):

* start — the first ``agent.call`` (the server is started and its tools listed);
* tool call p50 / p95 — one call of the tool through the agent's toolkit (argument validation,
  the round trip, result mapping);
* agent.call p50 — a whole ``agent.call`` of one tool step and a final answer, with the
  default durable stores (JSON state and JSONL session log in a temporary workspace);
* overhead — agent.call p50 minus that of the local tool;
* 100 sessions — wall time of 100 concurrent ``agent.call`` s, each making one tool call.

    python benchmarks/mcp.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# This file is named like the SDK's package `mcp`: keep its folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]


def serve(argv: list[str]) -> None:
    """The benchmark's MCP server (run in a child process)."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer as SDKServer
    from mcp_types import ToolAnnotations

    server = SDKServer("bench", log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    if argv[0] == "--stdio":
        server.run("stdio")
    else:
        # socket(fileno=...) keeps the real family (AF_INET), so TCP_NODELAY is set on
        # connections; uvicorn's fd= option assumes a Unix socket (then ~40 ms per response).
        sock = socket.socket(fileno=int(argv[1]))
        config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1].startswith("--serve-"):
    # the child process: the SDK's server only (it runs with a minimal environment)
    serve(["--stdio"] if sys.argv[1] == "--serve-stdio" else ["--http", sys.argv[2]])
    sys.exit(0)

from harnessed import HarnessAgent, RuntimeContext, tool  # noqa: E402
from harnessed.mcp import MCPServer  # noqa: E402
from harnessed.messages import ToolUseBlock  # noqa: E402
from harnessed.models import (  # noqa: E402
    ModelRequest,
    ScriptedModel,
    ScriptedResponse,
    ScriptedToolCall,
)
from harnessed.tools import ToolContext  # noqa: E402


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def responder(request: ModelRequest) -> ScriptedResponse | str:
    done = [r for m in request.messages for r in m.tool_results]
    if done:
        return done[-1].content
    return ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"key": "k"})])


def start_http() -> tuple[subprocess.Popen[bytes], str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-http", str(sock.fileno())], pass_fds=[sock.fileno()]
    )
    sock.close()
    return process, f"http://127.0.0.1:{port}/mcp"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


async def measure(label: str, rounds: int, **agent_kw: object) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel(responder=responder)
        agent = HarnessAgent(
            "bench",
            model,
            workspace=Path(tmp),
            shell=False,
            memory=False,
            **agent_kw,  # type: ignore[arg-type]
        )
        async with agent:
            started = time.perf_counter()
            await agent.call("warm up", RuntimeContext("u", "warm"))
            start = time.perf_counter() - started
            the_tool = agent.toolkit.get("lookup")
            assert the_tool is not None
            state = await agent.load_state(RuntimeContext("u", "warm").resolved("bench"))
            context = ToolContext("bench", RuntimeContext("u", "warm"), state, "c")
            call = ToolUseBlock("c", "lookup", {"key": "k"})
            direct = []
            for _ in range(rounds):
                t = time.perf_counter()
                await agent.toolkit.run_step([call], lambda _c: context)
                direct.append(time.perf_counter() - t)
            calls = []
            for i in range(max(20, rounds // 5)):
                t = time.perf_counter()
                await agent.call(f"look up {i}", RuntimeContext("u", f"s{i}"))
                calls.append(time.perf_counter() - t)
            t = time.perf_counter()
            await asyncio.gather(
                *(agent.call("go", RuntimeContext("u", f"c{i}")) for i in range(100))
            )
            crowd = time.perf_counter() - t
    direct.sort()
    return [
        label,
        ms(start),
        ms(statistics.median(direct)),
        ms(direct[int(len(direct) * 0.95)]),
        ms(statistics.median(calls)),
        "",
        f"{crowd:.2f} s",
    ]


async def main(rounds: int) -> None:
    rows = [await measure("local @tool", rounds, tools=[lookup])]
    stdio = MCPServer.stdio(sys.executable, __file__, "--serve-stdio", name="bench")
    rows.append(await measure("MCP stdio", rounds, mcp_servers=[stdio]))
    process, url = start_http()
    try:
        rows.append(await measure("MCP streamable HTTP", rounds, mcp_servers=[url]))
    finally:
        process.terminate()
        process.wait(10)
    base = float(rows[0][4])
    for row in rows:
        row[5] = f"+{float(row[4]) - base:.2f}" if row is not rows[0] else "—"
    header = [
        "tool",
        "start ms",
        "tool call p50 ms",
        "p95 ms",
        "agent.call p50 ms",
        "overhead ms",
        "100 sessions",
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    asyncio.run(main(parser.parse_args().rounds))
