"""The HTTP channel: a FastAPI app serving agents' sessions, their events as SSE, and the web
chat page.

Every route but the page needs ``Authorization: Bearer <token>``; the token decides the user.
Sessions belong to their user: another user's session id answers 404, exactly like one that
does not exist.
"""

import asyncio
import contextlib
import dataclasses
import gc
import json
import re
import secrets
from collections.abc import AsyncIterator, Mapping
from importlib import resources
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import Receive, Scope, Send

from harnessed.gateway.auth import BearerAuth
from harnessed.gateway.fastpath import MessageFastPath
from harnessed.gateway.gateway import Gateway, UnknownAgentError
from harnessed.gateway.identity import SESSION_ID_PATTERN, check_session_id
from harnessed.gateway.limits import BodySizeLimit
from harnessed.gateway.schemas import (
    AgentList,
    AnswerIn,
    CompactOut,
    ConfirmationOut,
    Created,
    HistoryOut,
    InterruptOut,
    MessageIn,
    Problem,
    SessionIn,
    SessionList,
    SessionOut,
    SteerIn,
    SteerOut,
    UsageOut,
)
from harnessed.gateway.sse import KEEPALIVE_SECONDS, feed_stream, turn_stream
from harnessed.log.record import RecordType
from harnessed.output.spec import OutputSpec
from harnessed.permissions import ConfirmationError
from harnessed.permissions.answers import QuestionAnswerError, is_question
from harnessed.sessions import (
    AgentSession,
    IdempotencyConflictError,
    NothingToResumeError,
    SessionBusyError,
    SessionIdleError,
    Turn,
)
from harnessed.turns.feed import feed_of, remote_turn, running_turn_id

__all__ = ["create_app"]

DEFAULT_MAX_BODY_BYTES = 1_000_000

_SSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The turn's events as server-sent events, from `turn` to `agent_end`.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    404: {"model": Problem, "description": "No such session for this user."},
    409: {"model": Problem, "description": "The session is busy, or the key was reused."},
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "No such session for this user."}
}


def create_app(
    gateway: Gateway,
    auth: BearerAuth,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    keepalive: float = KEEPALIVE_SECONDS,
    chat_page: bool = True,
    title: str = "harnessed",
    freeze_startup_objects: bool = True,
    ag_ui: bool = False,
    wakeups: bool = True,
) -> FastAPI:
    """The ASGI app of the HTTP channel (serve it with uvicorn, or ``harnessed serve``).

    Args:
        gateway: The agents to serve.
        auth: Bearer token → user id.
        max_body_bytes: Requests with a larger body get 413.
        keepalive: Seconds between SSE keep-alive comments while a turn is quiet.
        chat_page: Serve the web chat page at ``/``.
        freeze_startup_objects: When the server starts the app, move every object that
            exists then (modules, the app, the agents) out of the cyclic garbage collector's
            sight (:func:`gc.freeze`): a full collection then scans only what requests made
            since, a few milliseconds instead of the ~50 ms it took to scan everything, time in
            which the server answers no one.
        ag_ui: Also serve the turns as the AG-UI protocol at ``POST /v1/ag-ui`` (same
            sessions, same bearer tokens; needs the ``ag-ui`` extra).

    The gateway's channels (Slack, Feishu, webhook ...) are served by the same app: their
    routes are mounted here and they start and stop with the server.
        wakeups: While the server runs, fire the due wake-ups of the agents that have the
            :class:`~harnessed.wakeups.Wakeups` capability (a
            :class:`~harnessed.wakeups.WakeupDispatcher`; any number of servers may share a
            store, each wake-up fires once).
    """
    if not isinstance(gateway, Gateway):
        raise TypeError("create_app needs a Gateway (Gateway(agent) serves one agent)")
    if not isinstance(auth, BearerAuth):
        raise TypeError("create_app needs a BearerAuth (a token map or a resolve callback)")

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        from harnessed.wakeups import WakeupDispatcher

        dispatcher = WakeupDispatcher(gateway.agents.values()) if wakeups else None
        if freeze_startup_objects:
            gc.collect()
            gc.freeze()
        await gateway.start()
        if dispatcher is not None and dispatcher.active:
            dispatcher.start()
        try:
            yield
        finally:
            if dispatcher is not None:
                await dispatcher.stop()
            await gateway.close()

    app = FastAPI(
        title=title,
        version="1",
        description="Sessions of harnessed agents: send messages and follow the turns' events "
        "(server-sent events), steer or interrupt running turns, answer confirmations.",
        lifespan=lifespan,
    )
    _add_output_schemas(app, gateway)
    bearer = HTTPBearer(auto_error=False, description="A token the server maps to a user id.")

    async def current_user(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> str:
        user = await auth.user_for(credentials.credentials) if credentials else None
        if user is None:
            raise HTTPException(
                401,
                "a valid bearer token is required" if credentials else "missing bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return user

    User = Annotated[str, Depends(current_user)]
    AgentName = Annotated[
        str | None, Query(max_length=100, description="The agent (default: the default one).")
    ]
    SessionId = Annotated[str, Path(pattern=SESSION_ID_PATTERN)]

    def session_of(user: str, session_id: str, agent: str | None) -> AgentSession:
        try:
            return gateway.session(user, session_id, agent)
        except UnknownAgentError as exc:
            raise HTTPException(404, str(exc)) from None

    async def owned(user: User, session_id: SessionId, agent: AgentName = None) -> AgentSession:
        session = session_of(user, session_id, agent)
        if not await gateway.exists(session):
            raise HTTPException(404, f"no session {session_id!r}")
        return session

    Owned = Annotated[AgentSession, Depends(owned)]

    def out(
        session: AgentSession, updated_at: float | None = None, running: str | None = None
    ) -> SessionOut:
        turn = session.running
        return SessionOut(
            session_id=session.session_id,
            agent=session.agent.name,
            updated_at=updated_at,
            running_turn=turn.id if turn is not None else running,
        )

    async def out_anywhere(session: AgentSession) -> SessionOut:
        """``out`` with the turn running on any server of a shared store."""
        return out(session, running=await running_turn_id(session))

    def stream(turn: Turn) -> StreamingResponse:
        return EventStreamResponse(
            turn_stream(turn, keepalive),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def start_turn(session: AgentSession, body: MessageIn) -> StreamingResponse:
        try:
            turn = await session.submit(body.text, body.idempotency_key, wait=body.wait)
        except (SessionBusyError, IdempotencyConflictError) as exc:
            raise HTTPException(409, str(exc)) from None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return stream(turn)

    # ------------------------------------------------------------------ routes
    @app.get("/v1/agents", response_model=AgentList, tags=["agents"])
    async def list_agents(_: User) -> AgentList:
        """The agents this server serves."""
        return AgentList(agents=list(gateway.agents), default=gateway.default_agent)

    @app.post(
        "/v1/sessions",
        response_model=Created,
        status_code=201,
        responses=_NOT_FOUND,
        tags=["sessions"],
    )
    async def create_session(
        user: User, response: Response, body: SessionIn | None = None, agent: AgentName = None
    ) -> Created:
        """Create a session (or return the caller's existing one with that id)."""
        session_id = (body.session_id if body else None) or "s-" + secrets.token_hex(8)
        session = session_of(user, session_id, agent)
        created = await gateway.open(session, channel="http")
        if not created:
            response.status_code = 200
        return Created(**(await out_anywhere(session)).model_dump(), created=created)

    @app.get("/v1/sessions", response_model=SessionList, responses=_NOT_FOUND, tags=["sessions"])
    async def list_sessions(user: User, agent: AgentName = None) -> SessionList:
        """The caller's sessions, most recent first."""
        try:
            infos = await gateway.sessions(user, agent)
        except UnknownAgentError as exc:
            raise HTTPException(404, str(exc)) from None
        served = gateway.agent(agent)
        feed = feed_of(served)
        elsewhere: dict[str, str] = {}
        if feed is not None and infos:
            with contextlib.suppress(Exception):  # a store that is down: local turns only
                elsewhere = await feed.running_in(served.name, user)
        return SessionList(
            sessions=[
                out(
                    session_of(user, i.session_id, agent), i.updated_at, elsewhere.get(i.session_id)
                )
                for i in infos
                if _valid_id(i.session_id)
            ]
        )

    @app.get(
        "/v1/sessions/{session_id}",
        response_model=SessionOut,
        responses=_NOT_FOUND,
        tags=["sessions"],
    )
    async def get_session(session: Owned) -> SessionOut:
        """One session of the caller, with what it has spent so far; ``running_turn`` is the
        turn running in it on any server sharing the store."""
        usage = await session.agent.session_usage(session.ctx)
        view = await out_anywhere(session)
        return view.model_copy(update={"usage": UsageOut(**usage.to_dict())})

    @app.get(
        "/v1/sessions/{session_id}/messages",
        response_model=HistoryOut,
        responses=_NOT_FOUND,
        tags=["sessions"],
    )
    async def read_history(session: Owned) -> HistoryOut:
        """Every message of the session as it happened (nothing summarized), each with the
        ``run_id`` of the turn that added it."""
        records = await session.agent.session_log(session.ctx, types=[RecordType.MESSAGE])
        return HistoryOut(
            messages=[
                {**m.to_dict(), "run_id": r.run_id} for r in records if (m := r.message) is not None
            ]
        )

    @app.post(
        "/v1/sessions/{session_id}/messages",
        response_class=StreamingResponse,
        responses=_SSE,
        tags=["turns"],
    )
    async def post_message(session: Owned, body: MessageIn) -> StreamingResponse:
        """Send a message and stream the turn it starts (queued behind a running turn)."""
        return await start_turn(session, body)

    @app.post(
        "/v1/sessions/{session_id}/resume",
        response_class=StreamingResponse,
        responses=_SSE,
        tags=["turns"],
    )
    async def resume(session: Owned) -> StreamingResponse:
        """Continue an interrupted turn or a step that waited for confirmations."""
        try:
            return stream(await session.resume())
        except NothingToResumeError as exc:
            raise HTTPException(409, str(exc)) from None

    @app.get(
        "/v1/sessions/{session_id}/turns/{turn_id}/events",
        response_class=StreamingResponse,
        responses=_SSE,
        tags=["turns"],
    )
    async def turn_events(
        session: Owned, turn_id: Annotated[str, Path(max_length=100)]
    ) -> StreamingResponse:
        """A turn's events again, from its start and then live (a page that reconnects).
        Turns are kept in the server's memory for a while; with a shared store a turn of
        another server streams from the store's feed; an unknown one is 404."""
        for turn in session.tasks:
            if turn.id == turn_id:
                return stream(turn)
        remote = await remote_turn(session, turn_id)
        if remote is not None:
            return EventStreamResponse(
                feed_stream(remote, keepalive),
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        raise HTTPException(404, f"no turn {turn_id!r} in this session on this server")

    @app.post(
        "/v1/sessions/{session_id}/steer",
        response_model=SteerOut,
        status_code=202,
        responses={
            **_NOT_FOUND,
            409: {"model": Problem, "description": "No turn of the session is running anywhere."},
        },
        tags=["turns"],
    )
    async def steer(session: Owned, body: SteerIn) -> SteerOut:
        """Give the running turn a message it reads at its next reasoning step, wherever it
        runs: a turn of another server process gets it within a quarter of a second
        (``turn_id`` is then unknown here: null)."""
        try:
            sent = await session.send_steer(body.text)
        except SessionIdleError as exc:
            raise HTTPException(409, str(exc)) from None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        assert sent.message_id is not None
        return SteerOut(message_id=sent.message_id, turn_id=sent.turn_id)

    @app.post(
        "/v1/sessions/{session_id}/interrupt",
        response_model=InterruptOut,
        status_code=202,
        responses=_NOT_FOUND,
        tags=["turns"],
    )
    async def interrupt(session: Owned) -> InterruptOut:
        """Stop the running turn at its next safe point (its progress is saved), wherever it
        runs (``turn_id`` is null for a turn of another server process)."""
        sent = await session.send_interrupt()
        return InterruptOut(interrupted=sent is not None, turn_id=sent.turn_id if sent else None)

    @app.post(
        "/v1/sessions/{session_id}/compact",
        response_model=CompactOut,
        responses={
            **_NOT_FOUND,
            409: {"model": Problem, "description": "A turn of the session is running here."},
        },
        tags=["sessions"],
    )
    async def compact(session: Owned) -> CompactOut:
        """Summarize the session's earlier history now (``/compact``): what it summarized and
        the working history's size before and after. The message history keeps every original
        message; a summary that fails changes nothing (``status`` failed, with ``error``)."""
        turn = session.running
        if turn is not None and not turn.done:  # one that just ended gives its lease back
            raise HTTPException(409, "a turn of this session is running: compact after it ends")
        return CompactOut(**dataclasses.asdict(await session.agent.compact(session.ctx)))

    @app.get(
        "/v1/sessions/{session_id}/confirmations",
        response_model=list[ConfirmationOut],
        responses=_NOT_FOUND,
        tags=["confirmations"],
    )
    async def confirmations(session: Owned) -> list[ConfirmationOut]:
        """Tool calls waiting for the user's approval."""
        pending = await session.agent.pending_confirmations(session.ctx)
        return [
            ConfirmationOut(
                request_id=p.request_id,
                tool=p.call.name,
                arguments=dict(p.call.input),
                reason=p.reason,
                kind="question" if is_question(p.details) else "confirmation",
                details=dict(p.details),
            )
            for p in pending
        ]

    @app.post(
        "/v1/sessions/{session_id}/confirmations/{request_id}",
        status_code=204,
        responses={
            **_NOT_FOUND,
            409: {"model": Problem, "description": "Already answered otherwise."},
        },
        tags=["confirmations"],
    )
    async def answer(
        session: Owned,
        request_id: Annotated[str, Path(max_length=200)],
        body: AnswerIn,
    ) -> Response:
        """Approve or decline a tool call, or answer a question (``answer``)."""
        given = {"answer": body.answer} if "answer" in body.model_fields_set else {}
        try:
            await session.respond(request_id, body.approved, feedback=body.feedback, **given)
        except QuestionAnswerError as exc:
            raise HTTPException(422, str(exc)) from None
        except ConfirmationError as exc:
            status = 404 if str(exc).startswith("no confirmation request") else 409
            raise HTTPException(status, str(exc)) from None
        return Response(status_code=204)

    for channel in gateway.channels.values():  # their platforms sign requests: no bearer token
        app.router.routes.extend(channel.routes())

    if ag_ui:
        from harnessed.gateway.channels.agui import add_ag_ui_route

        add_ag_ui_route(app, gateway, current_user, keepalive)

    if chat_page:
        page = _asset("chat.html")
        script = _asset("markdown.js") + "\n" + _asset("chat.js")  # one request, no build

        @app.get("/", response_class=HTMLResponse, include_in_schema=False)
        async def chat() -> HTMLResponse:
            return HTMLResponse(page, headers=_PAGE_HEADERS)

        @app.get("/chat.js", include_in_schema=False)
        async def chat_js() -> Response:
            return Response(script, media_type="text/javascript", headers=_PAGE_HEADERS)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> Response:
        # ASCII-escaped JSON: the echoed input may hold text UTF-8 cannot carry (lone
        # surrogates), which the default handler would turn into a server error
        body = json.dumps({"detail": jsonable_encoder(exc.errors())}, ensure_ascii=True)
        return Response(body, status_code=422, media_type="application/json")

    @app.exception_handler(UnknownAgentError)
    async def unknown_agent(_: Request, exc: UnknownAgentError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    # the common case of the hot route skips routing and dependency resolution (same answers)
    app.add_middleware(MessageFastPath, gateway=gateway, auth=auth, start=start_turn)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    return app


# the page runs its own script only (no inline script, no handler attributes, no other
# origin), talks to this server only and cannot be framed: a second line behind building
# every element with text, should markup ever reach the page
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
    "style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _add_output_schemas(app: FastAPI, gateway: Gateway) -> None:
    """Agents with an output type: its JSON schema in the OpenAPI document, as the component
    ``<agent>Output`` (what ``output`` of a turn's ``agent_end`` event holds)."""
    typed = {
        name: spec
        for name, agent in gateway.agents.items()
        if isinstance(spec := getattr(agent, "output", None), OutputSpec)
    }
    if not typed:
        return
    plain = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = plain()
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for name, spec in typed.items():
                schema = spec.adapter.json_schema(ref_template="#/components/schemas/{model}")
                schemas.update(schema.pop("$defs", {}))
                schema.setdefault("description", f"The typed answer of agent {name!r}.")
                schemas[f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}Output"] = schema
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _asset(name: str) -> str:
    return resources.files("harnessed.gateway").joinpath("static", name).read_text("utf-8")


def _valid_id(session_id: str) -> bool:
    try:
        check_session_id(session_id)
    except ValueError:
        return False
    return True


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
