"""The HTTP channel's routes, pinned: every path, method, handler name, status, tag, documented
answer and parameter of the app (with a channel, AG-UI and the page), and the layers in front of
the routes. A change here is a change of the public API, made on purpose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from harnessed import HarnessAgent
from harnessed.gateway import BearerAuth, Gateway, create_app
from harnessed.gateway.channels.webhook import WebhookChannel, WebhookConfig
from harnessed.models import ScriptedModel
from tests.gateway.helpers import ALICE, TOKENS

S = "/v1/sessions/{session_id}"
# method, path, handler, status code, tag, documented answers, parameters (in:name)
OPERATIONS = [
    ("GET", "/v1/agents", "list_agents", None, "agents", "200", ""),
    ("POST", "/v1/sessions", "create_session", 201, "sessions", "201 404 422", "query:agent"),
    ("GET", "/v1/sessions", "list_sessions", None, "sessions", "200 404 422", "query:agent"),
    ("GET", S, "get_session", None, "sessions", "200 404 422", "path:session_id query:agent"),
    (
        "GET",
        S + "/messages",
        "read_history",
        None,
        "sessions",
        "200 404 422",
        "path:session_id query:agent",
    ),
    (
        "POST",
        S + "/messages",
        "post_message",
        None,
        "turns",
        "200 404 409 422",
        "path:session_id query:agent",
    ),
    (
        "POST",
        S + "/resume",
        "resume",
        None,
        "turns",
        "200 404 409 422",
        "path:session_id query:agent",
    ),
    (
        "GET",
        S + "/turns/{turn_id}/events",
        "turn_events",
        None,
        "turns",
        "200 404 409 422",
        "path:turn_id path:session_id query:agent",
    ),
    ("POST", S + "/steer", "steer", 202, "turns", "202 404 409 422", "path:session_id query:agent"),
    (
        "POST",
        S + "/interrupt",
        "interrupt",
        202,
        "turns",
        "202 404 422",
        "path:session_id query:agent",
    ),
    (
        "POST",
        S + "/compact",
        "compact",
        None,
        "sessions",
        "200 404 409 422",
        "path:session_id query:agent",
    ),
    (
        "GET",
        S + "/confirmations",
        "confirmations",
        None,
        "confirmations",
        "200 404 422",
        "path:session_id query:agent",
    ),
    (
        "POST",
        S + "/confirmations/{request_id}",
        "answer",
        204,
        "confirmations",
        "204 404 409 422",
        "path:request_id path:session_id query:agent",
    ),
    ("POST", "/v1/ag-ui", "run", None, "ag-ui", "200 422", "query:agent"),
]
# routes outside the schema: the framework's documents, a channel's inbound route, the page
FRAMEWORK = [
    ("GET", "/openapi.json", "openapi", False),
    ("GET", "/docs", "swagger_ui_html", False),
    ("GET", "/docs/oauth2-redirect", "swagger_ui_redirect", False),
    ("GET", "/redoc", "redoc_html", False),
]
AFTER = [  # the order matters: the first route that matches answers
    ("POST", "/channels/webhook", "_inbound", True),  # a plain route, never in the schema
    ("POST", "/v1/ag-ui", "run", True),
    ("GET", "/", "chat", False),
    ("GET", "/chat.js", "chat_js", False),
]


def full_app(workspace: Path) -> Any:
    agent = HarnessAgent("helper", ScriptedModel(), workspace=workspace, shell=False, memory=False)
    hook = WebhookChannel(WebhookConfig(secret="s" * 20, callback_url="http://127.0.0.1:9/cb"))
    gateway = Gateway([agent], channels=[hook])
    return create_app(gateway, BearerAuth(TOKENS), ag_ui=True, freeze_startup_objects=False)


def test_the_routes_and_their_schema_are_pinned(tmp_path: Path) -> None:
    app = full_app(tmp_path)
    served = [
        (sorted(route.methods - {"HEAD"})[0], route.path, route.name, route.include_in_schema)
        for route in app.routes
    ]
    api = [(m, p, name, True) for m, p, name, *_ in OPERATIONS if p != "/v1/ag-ui"]
    assert served == FRAMEWORK + api + AFTER
    paths = app.openapi()["paths"]
    assert sum(len(ops) for ops in paths.values()) == len(OPERATIONS)
    for method, path, name, status, tag, answers, params in OPERATIONS:
        route = next(r for r in app.routes if r.path == path and method in r.methods)
        assert route.status_code == status, path
        operation = paths[path][method.lower()]
        assert operation["tags"] == [tag], path
        assert operation["operationId"].startswith(name + "_"), path
        assert " ".join(sorted(operation["responses"])) == answers, (method, path)
        given = " ".join(f"{p['in']}:{p['name']}" for p in operation.get("parameters", []))
        assert given == params, (method, path)
    assert app.openapi()["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_the_layers_in_front_of_the_routes(tmp_path: Path) -> None:
    app = full_app(tmp_path)
    # outermost first: the body limit, then the fast path of the hot route
    assert [m.cls.__name__ for m in app.user_middleware] == ["BodySizeLimit", "MessageFastPath"]


async def test_authentication_comes_before_the_session_id_is_checked(tmp_path: Path) -> None:
    transport = httpx.ASGITransport(app=full_app(tmp_path))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        assert (await client.get("/v1/sessions/bad%20id")).status_code == 401
        assert (await client.get("/v1/sessions/bad%20id", headers=ALICE)).status_code == 422
        assert (await client.get("/v1/sessions/nobody", headers=ALICE)).status_code == 404
