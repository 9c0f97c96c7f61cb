"""The HTTP channel: a FastAPI app serving agents' sessions, their events as SSE, and the web
chat page.

Every route but the page needs ``Authorization: Bearer <token>``; the token decides the user.
Sessions belong to their user: another user's session id answers 404, exactly like one that
does not exist. The routes are in :mod:`harnessed.gateway.routes`, one module per group;
:func:`create_app` composes them with the server's lifespan, error answers and middleware.
"""

import contextlib
import gc
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from harnessed.gateway.auth import BearerAuth
from harnessed.gateway.fastpath import MessageFastPath
from harnessed.gateway.gateway import Gateway, UnknownAgentError
from harnessed.gateway.limits import BodySizeLimit
from harnessed.gateway.routes import (
    AppState,
    add_channel_routes,
    add_confirmation_routes,
    add_control_routes,
    add_page_routes,
    add_session_routes,
    add_turn_routes,
)
from harnessed.gateway.sse import KEEPALIVE_SECONDS
from harnessed.output.spec import OutputSpec

__all__ = ["create_app"]

DEFAULT_MAX_BODY_BYTES = 1_000_000


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
        wakeups: While the server runs, fire the due wake-ups of the agents that have the
            :class:`~harnessed.wakeups.Wakeups` capability (a
            :class:`~harnessed.wakeups.WakeupDispatcher`; any number of servers may share a
            store, each wake-up fires once). A woken turn's reply goes out through the channel
            its session was last reached on, if any.

    The gateway's channels (Slack, Feishu, webhook ...) are served by the same app: their
    routes are mounted here and they start and stop with the server.
    """
    if not isinstance(gateway, Gateway):
        raise TypeError("create_app needs a Gateway (Gateway(agent) serves one agent)")
    if not isinstance(auth, BearerAuth):
        raise TypeError("create_app needs a BearerAuth (a token map or a resolve callback)")
    app = FastAPI(
        title=title,
        version="1",
        description="Sessions of harnessed agents: send messages and follow the turns' events "
        "(server-sent events), steer or interrupt running turns, answer confirmations.",
        lifespan=_lifespan(gateway, wakeups=wakeups, freeze=freeze_startup_objects),
    )
    _add_output_schemas(app, gateway)
    state = AppState(gateway, auth, keepalive)
    for add_routes in (
        add_session_routes,
        add_turn_routes,
        add_control_routes,
        add_confirmation_routes,
    ):
        add_routes(app.router, state)
    add_channel_routes(app, state, ag_ui=ag_ui)
    if chat_page:
        add_page_routes(app.router)
    app.exception_handler(RequestValidationError)(_invalid)
    app.exception_handler(UnknownAgentError)(_unknown_agent)
    # the common case of the hot route skips routing and dependency resolution (same answers)
    app.add_middleware(MessageFastPath, gateway=gateway, auth=auth, start=state.start_turn)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    return app


def _lifespan(
    gateway: Gateway, *, wakeups: bool, freeze: bool
) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """The server's start and stop: the gateway (and its channels), the wake-up dispatcher."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        from harnessed.wakeups import WakeupDispatcher

        dispatcher = (
            WakeupDispatcher(gateway.agents.values(), on_woken=gateway.outbound.woken)
            if wakeups
            else None
        )
        if freeze:
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

    return lifespan


async def _invalid(_: Request, exc: RequestValidationError) -> Response:
    # ASCII-escaped JSON: the echoed input may hold text UTF-8 cannot carry (lone
    # surrogates), which the default handler would turn into a server error
    body = json.dumps({"detail": jsonable_encoder(exc.errors())}, ensure_ascii=True)
    return Response(body, status_code=422, media_type="application/json")


async def _unknown_agent(_: Request, exc: UnknownAgentError) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=404)


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
