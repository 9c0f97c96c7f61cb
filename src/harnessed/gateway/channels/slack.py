"""Slack, on the official SDKs (``slack-bolt`` and ``slack-sdk``; the ``slack`` extra).

Bolt checks each Events API request as Slack signs it (``X-Slack-Signature``: ``v0=`` and
HMAC-SHA256 of ``v0:<timestamp>:<body>`` under the app's signing secret, a timestamp at most
five minutes old) and acknowledges the event at once (Slack wants an answer within three
seconds); the turn runs after. Direct messages and mentions of the bot start turns; the reply
goes with ``chat.postMessage`` to the same channel — into the thread of a mention, so each
thread is a conversation — and, in ``stream="edit"`` mode, grows by ``chat.update``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from harnessed.gateway.channels.base import (
    Address,
    ChannelConfig,
    ChatChannel,
    Inbound,
    MessageKind,
    require_text,
)
from harnessed.gateway.identity import ChannelIdentity

if TYPE_CHECKING:
    from harnessed.gateway.gateway import Gateway

__all__ = ["SlackChannel", "SlackConfig"]

logger = logging.getLogger(__name__)

_MENTION = re.compile(r"<@[A-Z0-9]+>\s*")
_MAX_TEXT = 40_000  # Slack's own limit on a message's text


@dataclass(frozen=True, kw_only=True)
class SlackConfig(ChannelConfig):
    """A Slack app.

    Attributes:
        signing_secret: The app's signing secret (Basic Information → App Credentials).
        bot_token: The bot's ``xoxb-`` token.
        path: The Events API request URL's path on this server.
        base_url: Slack's Web API (``None``: Slack's own; set for a proxy or a test double).
        thread_sessions: A mention in a channel starts a conversation per thread (``True``)
            or one per channel (``False``).
    """

    name: str = "slack"
    signing_secret: str
    bot_token: str
    path: str = "/channels/slack/events"
    base_url: str | None = None
    thread_sessions: bool = True

    def __post_init__(self) -> None:
        ChannelConfig.__post_init__(self)
        require_text(self, "signing_secret", self.signing_secret, 8)
        require_text(self, "bot_token", self.bot_token, 8)
        if not isinstance(self.path, str) or not self.path.startswith("/"):
            raise ValueError("SlackConfig.path must start with '/'")
        if self.base_url is not None and not re.match(r"^https?://", str(self.base_url)):
            raise ValueError("SlackConfig.base_url must be an http or https URL")


class SlackChannel(ChatChannel):
    """Slack through Bolt (see the module docstring)."""

    config: SlackConfig

    def __init__(self, config: SlackConfig) -> None:
        if not isinstance(config, SlackConfig):
            raise TypeError("SlackChannel needs a SlackConfig")
        super().__init__(config)
        base = config.base_url
        if base is not None and not base.endswith("/"):
            base += "/"
        self.client = (
            AsyncWebClient(token=config.bot_token, base_url=base)
            if base is not None
            else AsyncWebClient(token=config.bot_token)
        )
        self.bolt = AsyncApp(
            signing_secret=config.signing_secret,
            client=self.client,  # carries the bot token
            process_before_response=False,  # ack first, then the listener
            logger=logger,
        )
        self.bolt.event("message")(self._on_message)
        self.bolt.event("app_mention")(self._on_mention)
        self._handler = AsyncSlackRequestHandler(self.bolt)

    def routes(self) -> Sequence[BaseRoute]:
        return [Route(self.config.path, self._inbound, methods=["POST"])]

    async def start(self, gateway: Gateway) -> None:
        await super().start(gateway)

    async def _inbound(self, request: Request) -> Response:
        if self._gateway is None:
            return Response("the channel is not running", status_code=503)
        try:
            (await request.body()).decode("utf-8")
        except UnicodeDecodeError:  # Bolt would fail on it; Slack never sends such a body
            return Response("the body is not UTF-8", status_code=400)
        return await self._handler.handle(request)

    # ------------------------------------------------------------ listeners
    async def _on_message(self, body: Mapping[str, Any], event: Mapping[str, Any]) -> None:
        if event.get("channel_type") != "im":
            return  # in channels the bot answers mentions (app_mention)
        if event.get("subtype") is not None or event.get("bot_id"):
            return  # edits, joins, and bots (itself included) start no turn
        self._take(body, event, direct=True)

    async def _on_mention(self, body: Mapping[str, Any], event: Mapping[str, Any]) -> None:
        if event.get("bot_id") or event.get("subtype") is not None:
            return
        self._take(body, event, direct=False)

    def _take(self, body: Mapping[str, Any], event: Mapping[str, Any], *, direct: bool) -> None:
        user, channel = event.get("user"), event.get("channel")
        text = _MENTION.sub("", str(event.get("text") or "")).strip()
        if not isinstance(user, str) or not isinstance(channel, str) or not user or not channel:
            return
        if not text:
            return
        team = str(body.get("team_id") or event.get("team") or "slack")
        ts = str(event.get("ts") or "")
        thread = event.get("thread_ts")
        if direct:
            peer = user
            address = {"channel": channel, "thread_ts": thread}
        else:
            thread = thread or ts
            peer = f"{channel}/{thread}" if self.config.thread_sessions else channel
            address = {"channel": channel, "thread_ts": thread}
        event_id = body.get("event_id")
        self.accept(
            Inbound(
                ChannelIdentity(self.name, team, peer),
                Address(self.name, {"team": team, **{k: v for k, v in address.items() if v}}),
                text[:_MAX_TEXT],
                str(event_id) if event_id else None,
            )
        )

    # ------------------------------------------------------------- outbound
    async def send(
        self, address: Address, text: str, *, kind: MessageKind = "message"
    ) -> str | None:
        channel = address.get("channel")
        if channel is None:
            raise ValueError(f"a Slack address needs a channel: {address.data}")
        kwargs: dict[str, Any] = {"channel": channel, "text": text[:_MAX_TEXT]}
        thread = address.get("thread_ts")
        if thread:
            kwargs["thread_ts"] = thread
        response = await self.client.chat_postMessage(**kwargs)
        ts = response.get("ts")
        return str(ts) if ts else None

    async def update(self, address: Address, ref: str, text: str) -> bool:
        channel = address.get("channel")
        if channel is None:
            return False
        await self.client.chat_update(channel=channel, ts=ref, text=text[:_MAX_TEXT])
        return True

    async def stop(self) -> None:
        await super().stop()
        session = getattr(self.client, "session", None)
        if session is not None and not session.closed:
            await session.close()
