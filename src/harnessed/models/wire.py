"""What a provider really sent, when it is not the wire format.

Proxies answer with HTML error pages, servers send empty or truncated bodies, and streams carry
lines that are not server-sent events or are cut mid-answer. The SDKs either skip such bytes
silently or fail deep inside with a bare ``JSONDecodeError``. The helpers here let an adapter
see the body it got (:class:`BodyTap`), describe where it came from (:func:`origin`), turn it
into a typed, retryable :class:`~harnessed.models.errors.ModelError` (:func:`malformed`), and
keep a connection whose answer was broken out of the pool (:func:`retire`), so the next request
does not land on a socket the server is about to drop.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from harnessed.models.errors import ModelError

__all__ = [
    "BodyTap",
    "SNIPPET_CHARS",
    "body_says_nothing",
    "broken",
    "content_type",
    "error_body",
    "malformed",
    "origin",
    "retire",
    "shown_chars",
    "silent_server",
    "snippet",
]

SNIPPET_CHARS = 200
"""How much of a body that is not the wire format an error message quotes."""

_STREAM_HEAD = 4096
"""Bytes of a streamed body kept for an error message (the head is what names the problem)."""


class BodyTap:
    """Counts and keeps the head of the decoded body an SDK reads from ``response``.

    Both SDKs read a stream through ``response.aiter_bytes()``; the tap wraps that method of
    this one response, so the bytes still flow to the SDK unchanged.
    """

    def __init__(self, response: Any, keep: int = _STREAM_HEAD) -> None:
        self.received = 0
        """Bytes of body read so far (after content decoding)."""
        self._head = bytearray()
        self._keep = keep
        original = getattr(response, "aiter_bytes", None)
        if original is None:  # not an httpx response (a test double): nothing to watch
            return

        async def aiter_bytes(chunk_size: int | None = None) -> AsyncIterator[bytes]:
            async for piece in original(chunk_size):
                self.received += len(piece)
                if len(self._head) < self._keep:
                    self._head += piece[: self._keep - len(self._head)]
                yield piece

        response.aiter_bytes = aiter_bytes

    @property
    def head(self) -> bytes:
        """The first bytes of the body (at most ``keep``)."""
        return bytes(self._head)


def shown_chars(event: object) -> int:
    """Characters of answer (text or thinking) an event shows the user."""
    text = getattr(event, "text", None)
    if not isinstance(text, str):
        text = getattr(event, "thinking", None)
    return len(text) if isinstance(text, str) else 0


def silent_server(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a read timeout: the server took the request
    and then sent nothing, which is not the same as not being reachable."""
    import httpx2

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, httpx2.ReadTimeout):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def origin(response: Any) -> str:
    """``HTTP 200 from POST http://host/v1/chat/completions`` for an httpx response."""
    status = getattr(response, "status_code", None)
    request = getattr(response, "request", None)
    method = getattr(request, "method", "")
    url = getattr(request, "url", None)
    where = f" from {method} {url}".replace("  ", " ") if url is not None else ""
    return f"HTTP {status}{where}"


def content_type(response: Any) -> str:
    """The media type of ``response`` (lowercase, without parameters), or ``"none"``."""
    headers = getattr(response, "headers", None)
    value = headers.get("content-type", "") if headers is not None else ""
    return str(value).split(";", 1)[0].strip().lower() or "none"


def snippet(body: bytes | str) -> str:
    """The start of a body, whitespace collapsed, for an error message."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + " ..."


def body_says_nothing(head: bytes) -> bool:
    """Whether a streamed body holds no event at all: only blank lines, comments
    (``: ping``), event names and ``data: [DONE]``. Such a stream is empty, not garbage."""
    for raw in head.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if not line or line.startswith(":") or line.startswith("event:"):
            continue
        if line.startswith("data:") and line[5:].strip() in ("", "[DONE]"):
            continue
        return False
    return True


def error_body(body: bytes | str) -> tuple[str, str] | None:
    """``(type, message)`` when ``body`` is a JSON error object (``{"error": ...}``)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, str) and error:
        return "", error
    if not isinstance(error, dict):
        return None
    kind, message = error.get("type"), error.get("message")
    kind = kind if isinstance(kind, str) else ""
    message = message if isinstance(message, str) and message else json.dumps(error)[:300]
    code = error.get("code")
    if isinstance(code, str) and code and code not in message:
        message = f"{message} (code: {code})"
    return kind, message


def malformed(
    provider: str, response: Any, what: str, body: bytes | str | BodyTap | None = None
) -> ModelError:
    """A retryable error for a body that is not the wire format: what was wrong, the HTTP
    status and URL, the content type and size, and the start of the body (``body`` is the
    body, or the tap that watched it being read)."""
    if isinstance(body, BodyTap):
        size: int | None = body.received
        body = body.head
    else:
        size = len(body) if body is not None else None
    shown = snippet(body) if body else ""
    described = f"{content_type(response)}" + (f", {size} bytes" if size is not None else "")
    message = f"{what} ({origin(response)}, {described})" + (f": {shown}" if shown else "")
    status = getattr(response, "status_code", None)
    return ModelError(
        message,
        status_code=status if isinstance(status, int) else None,
        provider=provider,
        retryable=True,
    )


def broken(provider: str, response: Any, what: str) -> ModelError:
    """A retryable error for an answer that started well and then broke (a cut stream)."""
    status = getattr(response, "status_code", None)
    return ModelError(
        f"{what} ({origin(response)})",
        status_code=status if isinstance(status, int) else None,
        provider=provider,
        retryable=True,
    )


async def retire(response: Any) -> None:
    """Close the HTTP/1.1 connection ``response`` came on, so the pool drops it.

    The pool reuses a connection whose response was read to its end. After an answer that was
    empty or broken the server is often about to drop that connection (llama-cpp-python says
    ``keep-alive`` and then closes it); the next request on it would fail as a connection
    error. A closed socket reads as "server disconnected" to the pool, which then discards the
    connection and opens a fresh one. HTTP/2 connections are shared by concurrent requests and
    are left alone.
    """
    extensions = getattr(response, "extensions", None) or {}
    stream = extensions.get("network_stream")
    if stream is None or extensions.get("http_version", b"HTTP/1.1") != b"HTTP/1.1":
        return
    with contextlib.suppress(Exception):  # already closed or broken: it is gone either way
        await stream.aclose()
