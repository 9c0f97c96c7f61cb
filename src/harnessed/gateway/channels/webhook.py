"""A generic signed webhook channel, for any system that can send and receive HTTP.

Inbound: ``POST <path>`` with a JSON body ``{"peer": ..., "text": ..., "message_id"?: ...,
"account"?: ..., "thread"?: ...}``, signed as :mod:`.signing` says. A good request is answered
``202`` at once; the turn runs after. Replies (and questions, notices, pushed messages) are
``POST``-ed to the configured ``callback_url`` as JSON ``{"kind", "text", "peer", "account",
"thread", "message_id", "replaces"?}``, signed the same way, so the receiver can check them.
The callback URL is configuration only: a request can never send the agent's words elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from harnessed.gateway.channels.base import (
    Address,
    ChannelConfig,
    ChatChannel,
    Inbound,
    MessageKind,
    require_text,
)
from harnessed.gateway.channels.signing import ReplayGuard, SignatureError, signed_headers
from harnessed.gateway.identity import ChannelIdentity
from harnessed.messages import new_id

if TYPE_CHECKING:
    from harnessed.gateway.gateway import Gateway

__all__ = ["WebhookChannel", "WebhookConfig"]

logger = logging.getLogger(__name__)

_MAX_FIELD = 200
_MAX_TEXT = 100_000


@dataclass(frozen=True, kw_only=True)
class WebhookConfig(ChannelConfig):
    """A signed webhook channel.

    Attributes:
        secret: The shared HMAC secret of inbound requests (at least 16 characters).
        callback_url: Where replies are posted (http or https).
        callback_secret: The secret that signs the callbacks (default: ``secret``).
        path: The inbound route.
        window_seconds: How old (or how far ahead) a signature's timestamp may be.
        account: The account of identities whose request names none.
        callback_attempts: How often a callback is tried before it is given up (logged).
    """

    name: str = "webhook"
    secret: str
    callback_url: str
    callback_secret: str | None = None
    path: str = "/channels/webhook"
    window_seconds: float = 300.0
    account: str = "default"
    callback_attempts: int = 3

    def __post_init__(self) -> None:
        ChannelConfig.__post_init__(self)
        require_text(self, "secret", self.secret, 16)
        if self.callback_secret is not None:
            require_text(self, "callback_secret", self.callback_secret, 16)
        parts = urlsplit(self.callback_url) if isinstance(self.callback_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("WebhookConfig.callback_url must be an http or https URL")
        if not isinstance(self.path, str) or not self.path.startswith("/"):
            raise ValueError("WebhookConfig.path must start with '/'")
        if not isinstance(self.window_seconds, int | float) or not 0 < self.window_seconds <= 3600:
            raise ValueError("WebhookConfig.window_seconds must be above 0 and at most 3600")
        require_text(self, "account", self.account)
        if not isinstance(self.callback_attempts, int) or not 1 <= self.callback_attempts <= 10:
            raise ValueError("WebhookConfig.callback_attempts must be 1 to 10")


class WebhookChannel(ChatChannel):
    """The generic signed webhook (see the module docstring)."""

    config: WebhookConfig

    def __init__(self, config: WebhookConfig) -> None:
        if not isinstance(config, WebhookConfig):
            raise TypeError("WebhookChannel needs a WebhookConfig")
        super().__init__(config)
        self.guard = ReplayGuard(config.secret, config.window_seconds)
        self._client: httpx.AsyncClient | None = None

    def routes(self) -> Sequence[BaseRoute]:
        return [Route(self.config.path, self._inbound, methods=["POST"])]

    async def start(self, gateway: Gateway) -> None:
        await super().start(gateway)
        self._client = httpx.AsyncClient(timeout=30, follow_redirects=False)

    async def stop(self) -> None:
        await super().stop()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -------------------------------------------------------------- inbound
    async def _inbound(self, request: Request) -> JSONResponse:
        body = await request.body()
        try:
            self.guard.check(request.headers, body)
        except SignatureError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=401)
        try:
            message = self._parse(body)
        except ValueError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=422)
        if self._gateway is None:
            return JSONResponse({"detail": "the channel is not running"}, status_code=503)
        self.accept(message)
        return JSONResponse({"accepted": True}, status_code=202)

    def _parse(self, body: bytes) -> Inbound:
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise ValueError("the body is not JSON") from None
        if not isinstance(data, dict):
            raise ValueError("the body must be a JSON object")
        fields: dict[str, str] = {}
        for name in ("peer", "account", "thread", "message_id"):
            value = data.get(name)
            if value is None:
                continue
            if not isinstance(value, str) or not value or len(value) > _MAX_FIELD:
                raise ValueError(f"{name} must be a string of 1 to {_MAX_FIELD} characters")
            fields[name] = value
        text = data.get("text")
        if not isinstance(text, str) or not text.strip() or len(text) > _MAX_TEXT:
            raise ValueError(f"text must be a non-blank string of at most {_MAX_TEXT} characters")
        if "peer" not in fields:
            raise ValueError("peer is required")
        account = fields.get("account", self.config.account)
        address = {"peer": fields["peer"], "account": account}
        if "thread" in fields:
            address["thread"] = fields["thread"]
        return Inbound(
            ChannelIdentity(self.name, account, fields["peer"]),
            Address(self.name, address),
            text,
            fields.get("message_id"),
        )

    # ------------------------------------------------------------- outbound
    async def send(
        self, address: Address, text: str, *, kind: MessageKind = "message"
    ) -> str | None:
        ref = new_id("out_")
        await self._post({**address.data, "kind": kind, "text": text, "message_id": ref})
        return ref

    async def update(self, address: Address, ref: str, text: str) -> bool:
        payload = {**address.data, "kind": "update", "text": text, "message_id": new_id("out_")}
        await self._post({**payload, "replaces": ref})
        return True

    async def _post(self, payload: dict[str, Any]) -> None:
        client = self._client
        if client is None:
            raise RuntimeError(f"{self!r} is not started")
        body = json.dumps(payload, ensure_ascii=False).encode()
        secret = self.config.callback_secret or self.config.secret
        for attempt in range(self.config.callback_attempts):
            headers = {"Content-Type": "application/json", **signed_headers(secret, body)}
            try:
                response = await client.post(
                    self.config.callback_url, content=body, headers=headers
                )
                if response.status_code < 500:
                    if response.status_code >= 400:
                        logger.warning("%r: the callback answered %d", self, response.status_code)
                    return
            except httpx.HTTPError as exc:
                logger.warning("%r: the callback failed: %s", self, exc)
            if attempt + 1 < self.config.callback_attempts:
                await asyncio.sleep(0.5 * 2**attempt)
        raise RuntimeError(f"{self!r}: the callback failed {self.config.callback_attempts} times")
