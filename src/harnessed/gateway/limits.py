"""A pure ASGI middleware that refuses request bodies above a size limit (413)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["BodySizeLimit"]

Scope = dict[str, Any]
Message = dict[str, Any]


class _TooLarge(Exception):
    pass


class BodySizeLimit:
    """Refuses a request whose ``Content-Length`` or streamed body exceeds ``max_bytes``."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError("max_body_bytes must be positive")
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await self._refuse(send, 400, "Content-Length is not a number")
                    return
                if declared > self.max_bytes:
                    await self._refuse(send, 413, self._message())
                    return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message: Message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send, 413, self._message())

    def _message(self) -> str:
        return f"the request body is larger than the limit of {self.max_bytes} bytes"

    @staticmethod
    async def _refuse(send: Any, status: int, detail: str) -> None:
        body = json.dumps({"detail": detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
