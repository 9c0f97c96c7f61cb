"""The response that streams a turn's server-sent events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["EventStreamResponse"]


class EventStreamResponse(StreamingResponse):
    """``text/event-stream`` whose head and first frame are written by the request's own task,
    before anything else runs: a client learns that its turn was accepted at once, even when
    the server is busy with many turns. The rest streams from the same task; a small watcher
    task ends the stream when the client goes away (one task per stream, where a task group
    per response would cost more than the whole route on a busy server)."""

    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterator[bytes], headers: Mapping[str, str]) -> None:
        super().__init__(content, headers=headers)
        self._content = content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        iterator = aiter(self._content)
        try:
            first = await anext(iterator, b"")  # a frame ready at once: no wait here
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            await send({"type": "http.response.body", "body": first, "more_body": True})
            if scope["type"] != "http":
                await self._rest(iterator, send)
                return
            streaming = asyncio.current_task()
            gone = False

            async def watch() -> None:
                nonlocal gone
                try:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                except Exception:  # a server that cannot say: the stream runs to its end
                    return
                gone = True
                if streaming is not None:
                    streaming.cancel()

            watcher = asyncio.create_task(watch())
            try:
                await self._rest(iterator, send)
            except asyncio.CancelledError:
                # the client left (the watcher's cancel, and no one else's): the stream ends
                # here, the turn runs on
                if not gone or streaming is None or streaming.uncancel() > 0:
                    raise
            finally:
                watcher.cancel()
        finally:
            closer = getattr(iterator, "aclose", None)
            if closer is not None:
                await closer()

    @staticmethod
    async def _rest(iterator: AsyncIterator[bytes], send: Send) -> None:
        async for chunk in iterator:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
