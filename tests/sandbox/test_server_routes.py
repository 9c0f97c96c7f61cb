"""The sandbox server's routes, pinned (path, method, handler, status), each behind the bearer
token; one round of files and a command through the ASGI app, with the default backend."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi.routing import APIRoute

from harnessed.sandbox.server import create_app

TOKEN = "route-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
S = "/sessions/{session_id}"
ROUTES = [  # method, path, handler, status code
    ("GET", "/health", "health", None),
    ("POST", S + "/execute", "execute", None),
    ("PUT", S + "/files/{path:path}", "upload", 204),
    ("GET", S + "/files/{path:path}", "download", None),
    ("DELETE", S + "/files/{path:path}", "delete", 204),
    ("GET", S + "/list", "listing", None),
    ("GET", S + "/exists", "exists", None),
    ("GET", S + "/snapshot", "snapshot", None),
    ("POST", S + "/restore", "restore", 204),
]


def test_the_routes_are_pinned_and_each_needs_the_token(tmp_path: Path) -> None:
    app = create_app(tmp_path, TOKEN)
    api = [r for r in app.routes if isinstance(r, APIRoute)]  # not the framework's documents
    assert [(sorted(r.methods or ())[0], r.path, r.name, r.status_code) for r in api] == ROUTES
    assert all(len(r.dependencies) == 1 for r in api)  # the bearer token check
    paths = app.openapi()["paths"]
    assert sum(len(operations) for operations in paths.values()) == len(ROUTES)


async def test_files_and_a_command_through_the_app(tmp_path: Path) -> None:
    transport = httpx.ASGITransport(app=create_app(tmp_path, TOKEN))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        assert (await client.get("/health")).status_code == 401
        assert (await client.get("/health", headers=AUTH)).json() == {"ok": True}
        put = await client.put("/sessions/s1/files/a.txt", content=b"hello", headers=AUTH)
        assert put.status_code == 204
        got = await client.get("/sessions/s1/files/a.txt", headers=AUTH)
        assert got.content == b"hello"
        listed = (await client.get("/sessions/s1/list", headers=AUTH)).json()
        assert [e["path"] for e in listed] == ["a.txt"]
        ran = await client.post("/sessions/s1/execute", json={"command": "cat a.txt"}, headers=AUTH)
        assert ran.json()["stdout"] == "hello" and ran.json()["exit_code"] == 0
        missing = await client.get("/sessions/s1/files/nothing.txt", headers=AUTH)
        assert missing.status_code == 404
        other = await client.get("/sessions/s2/files/a.txt", headers=AUTH)
        assert other.status_code == 404  # each session has its own directory
        gone = await client.delete("/sessions/s1/files/a.txt", headers=AUTH)
        assert gone.status_code == 204
        exists = await client.get("/sessions/s1/exists?path=a.txt", headers=AUTH)
        assert exists.json() == {"exists": False}
