"""``harnessed sandbox-server``: the runtime HTTP API, run inside any container image.

Every request carries ``Authorization: Bearer <token>``; anything else is refused with 401.
Each session has its own directory under the server's root (its ``/workspace``):

* ``POST /sessions/{id}/execute`` ``{"command": str, "timeout": float}`` →
  ``{"stdout", "stderr", "exit_code", "timed_out", "truncated", "total_bytes", "notes"}`` (the
  output is interleaved as written and returned as ``stdout``; ``stderr`` is empty; ``notes``:
  what the sandbox did about the command, e.g. stopped it at the workspace quota)
* ``PUT /sessions/{id}/files/{path}`` (body: the bytes) — upload
* ``GET /sessions/{id}/files/{path}`` — download
* ``DELETE /sessions/{id}/files/{path}``
* ``GET /sessions/{id}/list?path=`` → ``[{"path", "size", "modified_ns"}]``
* ``GET /sessions/{id}/exists?path=`` → ``{"exists": bool}``
* ``GET /sessions/{id}/snapshot`` (a tar.gz) and ``POST /sessions/{id}/restore`` (body: one)
* ``GET /health`` → ``{"ok": true}``

Commands run with the server's backend: by default directly in the session directory (the
container is the sandbox), or in bubblewrap inside the container (``--backend bubblewrap``).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Body, Depends, FastAPI, HTTPException, Request, Response
from pydantic import BaseModel, Field

from harnessed.sandbox.base import Sandbox, SandboxError, SandboxSession, SandboxSpec
from harnessed.sandbox.unisolated import HostSandbox
from harnessed.workspace.paths import encode_part
from harnessed.workspace.view import ViewPolicy

__all__ = ["ExecuteRequest", "create_app"]

MAX_TIMEOUT = 3600.0

T = TypeVar("T")


class ExecuteRequest(BaseModel):
    command: str = Field(min_length=1)
    timeout: float = Field(default=120.0, gt=0, le=MAX_TIMEOUT)
    max_output_bytes: int = Field(default=100_000, ge=2, le=10_000_000)


def create_app(root: str | Path, token: str, backend: Sandbox | None = None) -> FastAPI:
    """The server's ASGI app: sessions under ``root``, commands run by ``backend``."""
    if not token or len(token) < 16:
        raise ValueError("the sandbox server needs a token of at least 16 characters")
    base = Path(root).absolute()
    base.mkdir(parents=True, exist_ok=True)
    sessions = Sessions(backend or HostSandbox(state_dir=base))
    expected = f"Bearer {token}".encode()

    def authorized(request: Request) -> None:
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            raise HTTPException(401, "missing or wrong bearer token")

    app = FastAPI(title="harnessed sandbox server", dependencies=[Depends(authorized)])
    _add_command_routes(app.router, sessions)
    _add_file_routes(app.router, sessions)
    _add_archive_routes(app.router, sessions)
    return app


class Sessions:
    """The server's sandbox sessions by id, each started on first use with ``runner``."""

    def __init__(self, runner: Sandbox) -> None:
        self.runner = runner
        self.live: dict[str, SandboxSession] = {}

    async def get(self, session_id: str) -> SandboxSession:
        """The session (started now if new); 400 for an id that cannot name a directory."""
        try:
            encode_part(session_id, "session id")
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from exc
        live = self.live.get(session_id)
        if live is None:
            spec = SandboxSpec(("sandbox", "remote", session_id), ViewPolicy((), ()), None)
            live = self.live[session_id] = await self.runner.start(spec)
        return live


async def _guarded(action: Awaitable[T]) -> T:
    """``action``'s result; a :class:`SandboxError` answers with its status."""
    try:
        return await action
    except SandboxError as exc:
        raise HTTPException(_status(exc), str(exc)) from exc


def _add_command_routes(router: APIRouter, sessions: Sessions) -> None:
    """``GET /health`` and ``POST /sessions/{id}/execute``."""

    @router.get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    @router.post("/sessions/{session_id}/execute")
    async def execute(session_id: str, request: ExecuteRequest) -> dict[str, Any]:
        live = await sessions.get(session_id)
        result = await _guarded(
            live.execute(
                request.command, request.timeout, max_output_bytes=request.max_output_bytes
            )
        )
        return {
            "stdout": result.output,
            "stderr": "",
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "truncated": result.truncated,
            "total_bytes": result.total_bytes,
            "notes": list(result.notes),
        }


def _add_file_routes(router: APIRouter, sessions: Sessions) -> None:
    """Upload, download, delete, list and test files of a session's directory."""

    @router.put("/sessions/{session_id}/files/{path:path}", status_code=204)
    async def upload(session_id: str, path: str, request: Request) -> Response:
        live = await sessions.get(session_id)
        await _guarded(live.upload(path, await request.body()))
        return Response(status_code=204)

    @router.get("/sessions/{session_id}/files/{path:path}")
    async def download(session_id: str, path: str) -> Response:
        live = await sessions.get(session_id)
        data = await _guarded(live.download(path))
        return Response(data, media_type="application/octet-stream")

    @router.delete("/sessions/{session_id}/files/{path:path}", status_code=204)
    async def delete(session_id: str, path: str) -> Response:
        live = await sessions.get(session_id)
        await _guarded(live.delete(path))
        return Response(status_code=204)

    @router.get("/sessions/{session_id}/list")
    async def listing(session_id: str, path: str = "") -> list[dict[str, Any]]:
        live = await sessions.get(session_id)
        entries = await _guarded(live.list(path))
        return [{"path": e.path, "size": e.size, "modified_ns": e.modified_ns} for e in entries]

    @router.get("/sessions/{session_id}/exists")
    async def exists(session_id: str, path: str) -> dict[str, bool]:
        live = await sessions.get(session_id)
        return {"exists": await _guarded(live.exists(path))}


def _add_archive_routes(router: APIRouter, sessions: Sessions) -> None:
    """A session's directory as a tar.gz, and back."""

    @router.get("/sessions/{session_id}/snapshot")
    async def snapshot(session_id: str) -> Response:
        live = await sessions.get(session_id)
        return Response(await _guarded(live.snapshot()), media_type="application/gzip")

    @router.post("/sessions/{session_id}/restore", status_code=204)
    async def restore(
        session_id: str, archive: Annotated[bytes, Body(media_type="application/gzip")]
    ) -> Response:
        live = await sessions.get(session_id)
        await _guarded(live.restore(archive))
        return Response(status_code=204)


def _status(exc: SandboxError) -> int:
    text = str(exc)
    if "no such file" in text:
        return 404
    if "not allowed" in text:
        return 400
    return 500
