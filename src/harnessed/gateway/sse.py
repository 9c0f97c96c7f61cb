"""Server-sent events: a turn's events as ``text/event-stream`` frames."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from harnessed.sessions import Turn

__all__ = ["KEEPALIVE_SECONDS", "EventStreamResponse", "frame", "turn_stream"]

KEEPALIVE_SECONDS = 15.0


def frame(event: str, data: Mapping[str, Any], event_id: int | None = None) -> bytes:
    """One SSE frame (``data`` as one line of JSON)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"{head}event: {event}\ndata: {body}\n\n".encode()


async def turn_stream(turn: Turn, keepalive: float = KEEPALIVE_SECONDS) -> AsyncIterator[bytes]:
    """The turn's events from its start to its end, with keep-alive comments while idle.

    The first frame is ``turn`` (its id), so a client can steer or interrupt it at once. A turn
    that failed before its run started ends with an ``error`` frame.
    """
    yield frame("turn", {"turn_id": turn.id, "status": turn.status})
    count = 0
    last = ""
    async for batch in turn.batches(keepalive):
        if not batch:
            yield b": keep-alive\n\n"
            continue
        frames = []
        for event in batch:
            count += 1
            last = event.type
            frames.append(frame(event.type, event.to_dict(), count))
        yield b"".join(frames)  # one write for what arrived together
    if turn.end is None and last != "error":
        error = turn.error
        yield frame(
            "error",
            {
                "error_type": type(error).__name__ if error else "RuntimeError",
                "message": str(error) if error else "the turn ended without a result",
            },
            count + 1,
        )


class EventStreamResponse(StreamingResponse):
    """``text/event-stream`` whose head and first frame are written by the request's own task,
    before anything else runs: a client learns that its turn was accepted at once, even when
    the server is busy with many turns (the rest streams as usual, watching for the client
    going away)."""

    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterator[bytes], headers: Mapping[str, str]) -> None:
        super().__init__(content, headers=headers)
        self._head_sent = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            iterator = aiter(self.body_iterator)
            first = await anext(iterator, b"")  # a frame ready at once: no wait here
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            await send({"type": "http.response.body", "body": first, "more_body": True})
            self._head_sent = True
            self.body_iterator = iterator
        await super().__call__(scope, receive, send)

    async def stream_response(self, send: Send) -> None:
        if not self._head_sent:
            await super().stream_response(send)
            return
        async for chunk in self.body_iterator:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
