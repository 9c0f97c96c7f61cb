"""Channels configured for ``harnessed serve``: a file (secrets from the environment) or
objects named in code; the served app routes the platform's requests to them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from harnessed.cli.serve import build_app
from harnessed.gateway.channels import SlackChannel, WebhookChannel
from harnessed.gateway.channels.config import channel_from_dict, load_channels
from harnessed.gateway.channels.signing import signed_headers
from tests.gateway.channels.helpers import JSONResponse, Recorder, Route, json_body, serving

SECRET = "configured-secret-0123"


def args(**kw: Any) -> argparse.Namespace:
    base: dict[str, Any] = {
        "agent": ["tests.cli.chat_app:make_agent"],
        "token": ["serve-token-1=alice"],
        "auth": None,
        "max_body_bytes": 1_000_000,
        "channels": None,
        "channel": [],
        "ag_ui": False,
        "demo": False,
    }
    base.update(kw)
    return argparse.Namespace(**base)


def test_a_file_configures_channels_with_secrets_from_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "channels.toml"
    file.write_text(
        '[[channel]]\ntype = "webhook"\nsecret = "${HOOK_SECRET}"\n'
        'callback_url = "http://127.0.0.1:9/cb"\nscope = "peer"\n\n'
        '[[channel]]\ntype = "slack"\nsigning_secret = "${SLACK_SECRET}"\n'
        'bot_token = "xoxb-from-file-1"\n'
    )
    env = {"HOOK_SECRET": SECRET, "SLACK_SECRET": "slack-secret-99"}
    webhook, slack = load_channels(file, env)
    assert isinstance(webhook, WebhookChannel) and webhook.config.secret == SECRET
    assert webhook.config.scope.value == "peer"
    assert isinstance(slack, SlackChannel) and slack.config.signing_secret == "slack-secret-99"
    with pytest.raises(ValueError, match="SLACK_SECRET"):
        load_channels(file, {"HOOK_SECRET": SECRET})
    with pytest.raises(ValueError, match="type"):
        channel_from_dict({"type": "carrier-pigeon"}, {})
    with pytest.raises(ValueError, match="unknown field"):
        channel_from_dict(
            {"type": "webhook", "secret": SECRET, "callback_url": "http://x/", "callback": "typo"},
            {},
        )
    with pytest.raises(ValueError, match="secret"):
        channel_from_dict({"type": "webhook", "secret": "short", "callback_url": "http://x/"}, {})
    (tmp_path / "c.json").write_text(
        json.dumps(
            {
                "channels": [
                    {"type": "webhook", "secret": SECRET, "callback_url": "http://127.0.0.1:9/cb"}
                ]
            }
        )
    )
    assert isinstance(load_channels(tmp_path / "c.json", {})[0], WebhookChannel)


async def test_serve_builds_an_app_whose_channels_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAT_TEST_WORKSPACE", str(tmp_path))
    recorder = Recorder()

    async def callback(request: Any) -> JSONResponse:
        await recorder.add("cb", await json_body(request))
        return JSONResponse({})

    async with serving(Starlette(routes=[Route("/cb", callback, methods=["POST"])])) as hook:
        file = tmp_path / "channels.toml"
        file.write_text(
            f'[[channel]]\ntype = "webhook"\nsecret = "{SECRET}"\ncallback_url = "{hook}/cb"\n'
        )
        app = build_app(args(channels=str(file), ag_ui=True), {})
        paths = {getattr(r, "path", None) for r in app.routes}
        assert {"/channels/webhook", "/v1/ag-ui"} <= paths
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
            raw = json.dumps({"peer": "p1", "text": "hi"}).encode()
            r = await client.post(
                "/channels/webhook", content=raw, headers=signed_headers(SECRET, raw)
            )
            assert r.status_code == 202
            await recorder.wait_for(lambda calls: len(calls) >= 1)
            assert recorder.bodies()[0]["text"] == "You said: hi"


def test_serve_refuses_what_is_not_a_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAT_TEST_WORKSPACE", str(tmp_path))
    with pytest.raises(ValueError, match="Channel"):
        build_app(args(channel=["tests.cli.chat_app:make_agent"]), {})
