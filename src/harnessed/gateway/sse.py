"""Server-sent events: a turn's events as ``text/event-stream`` frames."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from harnessed.sessions import Turn
from harnessed.turns.feed import RemoteTurn

__all__ = ["KEEPALIVE_SECONDS", "feed_stream", "frame", "turn_stream"]

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


async def feed_stream(
    turn: RemoteTurn, keepalive: float = KEEPALIVE_SECONDS
) -> AsyncIterator[bytes]:
    """The frames of a turn that runs on another server, from the store's feed: the same
    frames, with the same ids, as :func:`turn_stream` gives on the server running it (the
    first, ``turn``, says ``running``)."""
    yield frame("turn", {"turn_id": turn.id, "status": "running"})
    last = ""
    async for batch in turn.batches(keepalive):
        if not batch:
            yield b": keep-alive\n\n"
            continue
        frames = []
        for entry in batch:
            data = entry.data
            if entry.kind == "event":
                last = str(data.get("type", "event"))
                frames.append(frame(last, data, entry.seq))
            elif "error_type" in data and last != "error":
                error = {"error_type": data["error_type"], "message": data.get("message", "")}
                frames.append(frame("error", error, entry.seq))
        if frames:
            yield b"".join(frames)
