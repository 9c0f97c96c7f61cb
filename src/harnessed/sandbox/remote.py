"""``RemoteSandbox``: commands run by a ``harnessed sandbox-server`` reached over HTTP.

The server runs inside a container image of your choice (see the README for a Dockerfile);
each session of the agent gets its own directory there. The sandbox has its own storage, so
the manager keeps it in step with the workspace around every command and snapshots it into
the workspace at the end of each call: another server (or a fresh container) restores it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from harnessed.sandbox.base import (
    ExecResult,
    SandboxEntry,
    SandboxError,
    SandboxSpec,
    SandboxUnavailableError,
)

if TYPE_CHECKING:
    import httpx2

__all__ = ["RemoteSandbox", "RemoteSession"]


class RemoteSandbox:
    """A sandbox server at ``url`` (e.g. ``http://sandbox:8900``), authenticated by ``token``.

    Args:
        url: The server's base URL.
        token: The bearer token the server was started with.
        timeout: Seconds for file transfers (a command may take its own timeout longer).
        transport: An ``httpx2`` transport (tests may pass ``httpx2.ASGITransport``).
    """

    isolated = True
    supports_mounts = False

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 60.0,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"RemoteSandbox url must start with http:// or https://, got {url!r}")
        if not token:
            raise ValueError("RemoteSandbox token must not be empty")
        self.url = url.rstrip("/")
        self._token = token
        self.timeout = timeout
        self._transport = transport
        self._client: httpx2.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"RemoteSandbox({self.url!r})"

    @property
    def client(self) -> httpx2.AsyncClient:
        if self._client is None:
            import httpx2  # imported on first use: ``import harnessed`` stays light

            self._client = httpx2.AsyncClient(
                base_url=self.url,
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=self.timeout,
                transport=self._transport,
            )
        return self._client

    def unavailable_reason(self) -> str | None:
        return None  # checked on first use: the server may start after the agent

    async def start(self, spec: SandboxSpec) -> RemoteSession:
        name = hashlib.sha256("\0".join(spec.key).encode()).hexdigest()[:32]
        session = RemoteSession(self, name)
        import httpx2

        try:
            response = await self.client.get("/health")
        except httpx2.HTTPError as exc:
            raise SandboxUnavailableError(f"sandbox server {self.url} unreachable: {exc}") from exc
        _check(response, "health check")
        return session

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class RemoteSession:
    """One session's directory on the sandbox server."""

    bound = False

    def __init__(self, backend: RemoteSandbox, name: str) -> None:
        self.backend = backend
        self.prefix = f"/sessions/{name}"

    async def _call(self, method: str, path: str, what: str, **kwargs: Any) -> httpx2.Response:
        import httpx2

        try:
            response = await self.backend.client.request(method, self.prefix + path, **kwargs)
        except httpx2.HTTPError as exc:
            raise SandboxError(f"{what}: the sandbox server failed ({exc!r})") from exc
        _check(response, what)
        return response

    async def execute(
        self,
        command: str,
        timeout: float,
        *,
        max_output_bytes: int = 100_000,
        mounts: Sequence[tuple[str, str]] = (),
    ) -> ExecResult:
        body = {"command": command, "timeout": timeout, "max_output_bytes": max_output_bytes}
        response = await self._call(
            "POST", "/execute", "execute", json=body, timeout=timeout + self.backend.timeout
        )
        data = response.json()
        output = data.get("stdout", "") + data.get("stderr", "")
        return ExecResult(
            output=output,
            exit_code=data.get("exit_code"),
            timed_out=bool(data.get("timed_out")),
            truncated=bool(data.get("truncated")),
            total_bytes=int(data.get("total_bytes") or len(output)),
            notes=tuple(str(n) for n in data.get("notes") or () if isinstance(n, str)),
        )

    async def upload(self, path: str, data: bytes) -> None:
        await self._call("PUT", f"/files/{quote(path)}", f"upload {path!r}", content=data)

    async def download(self, path: str) -> bytes:
        return (await self._call("GET", f"/files/{quote(path)}", f"download {path!r}")).content

    async def delete(self, path: str) -> None:
        await self._call("DELETE", f"/files/{quote(path)}", f"delete {path!r}")

    async def list(self, path: str = "") -> list[SandboxEntry]:
        response = await self._call("GET", "/list", "list", params={"path": path})
        return [
            SandboxEntry(e["path"], int(e["size"]), int(e["modified_ns"])) for e in response.json()
        ]

    async def exists(self, path: str) -> bool:
        response = await self._call("GET", "/exists", "exists", params={"path": path})
        return bool(response.json()["exists"])

    async def snapshot(self) -> bytes:
        return (await self._call("GET", "/snapshot", "snapshot")).content

    async def restore(self, archive: bytes) -> None:
        await self._call(
            "POST", "/restore", "restore", content=archive,
            headers={"Content-Type": "application/gzip"},
        )  # fmt: skip

    async def close(self) -> None:
        return None


def _check(response: httpx2.Response, what: str) -> None:
    if response.status_code < 400:
        return
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    if response.status_code == 401:
        raise SandboxUnavailableError(f"{what}: the sandbox server refused the token")
    raise SandboxError(f"{what}: the sandbox server answered {response.status_code}: {detail}")
