"""The hottest route of the HTTP channel, ``POST /v1/sessions/{id}/messages``, without the
framework's per-request machinery.

Under load the time to a turn's first event is the time the server's event loop needs to get
through the requests that arrived together, and the framework's routing and dependency
resolution were most of each request's cost. This ASGI layer answers the common case of that
route directly, with the same pieces the framework route uses (the bearer auth, the gateway's
session lookup, the :class:`~harnessed.gateway.schemas.MessageIn` model and the route's own
``start`` function). Everything else — another route, a query string, a missing or unknown
token, an unknown session, a body that does not validate — goes to the framework app
unchanged (with the body it already read), so those answers stay exactly the framework's.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from fastapi import HTTPException
from fastapi.exception_handlers import http_exception_handler
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from harnessed.gateway.auth import BearerAuth
from harnessed.gateway.gateway import Gateway
from harnessed.gateway.identity import SESSION_ID_PATTERN
from harnessed.gateway.schemas import MessageIn
from harnessed.sessions import AgentSession

__all__ = ["MessageFastPath"]

StartTurn = Callable[[AgentSession, MessageIn], Awaitable[Response]]

_PATH = re.compile(r"/v1/sessions/(" + SESSION_ID_PATTERN.strip("^$") + r")/messages")


class MessageFastPath:
    """Serves ``POST /v1/sessions/{id}/messages`` when the request is the ordinary kind
    (a valid token, a known session, a JSON body that validates); hands every other request
    to ``app``.

    Args:
        app: The framework app (it declares the route, for the schema and every other case).
        gateway: The served agents.
        auth: Bearer token → user id (the app's own).
        start: The route's handler: a validated body on an existing session → the response
            (it may raise :class:`HTTPException`, answered as the framework answers it).
    """

    def __init__(self, app: ASGIApp, *, gateway: Gateway, auth: BearerAuth, start: StartTurn):
        self.app = app
        self.gateway = gateway
        self.auth = auth
        self.start = start

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _route(scope)
        user = await self._user(scope) if match is not None else None
        session = await self._session(user, match) if user is not None else None
        if session is None:
            await self.app(scope, receive, send)
            return
        body, message = await _read_body(receive)
        if message is not None:  # the client went away before its body arrived
            await self.app(scope, _replay(body, receive, message), send)
            return
        parsed = _message_in(body)
        if parsed is None:  # the framework explains what is wrong with it
            await self.app(scope, _replay(body, receive), send)
            return
        try:
            response = await self.start(session, parsed)
        except HTTPException as exc:
            response = await http_exception_handler(Request(scope), exc)
        await response(scope, receive, send)

    async def _user(self, scope: Scope) -> str | None:
        authorization = [value for name, value in scope["headers"] if name == b"authorization"]
        if len(authorization) != 1:
            return None
        scheme, _, token = authorization[0].decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return await self.auth.user_for(token.strip())

    async def _session(self, user: str, session_id: str | None) -> AgentSession | None:
        if session_id is None:
            return None
        session = self.gateway.session(user, session_id)
        return session if await self.gateway.exists(session) else None


def _route(scope: Scope) -> str | None:
    """The session id of a plain request to the route (``None`` for anything else)."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    if scope.get("query_string") or scope.get("root_path"):
        return None
    match = _PATH.fullmatch(scope["path"])
    if match is None:
        return None
    for name, value in scope["headers"]:
        if name == b"content-type":
            return match.group(1) if value.split(b";")[0].strip() == b"application/json" else None
    return None


async def _read_body(receive: Receive) -> tuple[bytes, Message | None]:
    """The request body, and the message that ended it early (a disconnect), if any."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _message_in(body: bytes) -> MessageIn | None:
    try:
        return MessageIn.model_validate_json(body)
    except (ValueError, ValidationError):  # not JSON, not UTF-8, or not a valid message
        return None


def _replay(body: bytes, receive: Receive, last: Message | None = None) -> Receive:
    """``receive`` giving the body already read first (then ``last``, then ``receive``)."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if last is not None:
        pending = [{"type": "http.request", "body": body, "more_body": True}, last]

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
