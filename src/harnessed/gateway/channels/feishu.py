"""Feishu / Lark, on the official SDK (``lark-oapi``; the ``feishu`` extra).

Event callbacks are checked and opened by the SDK's dispatcher as the platform defines them:
the body is AES-256-CBC encrypted under the app's Encrypt Key, the verification token inside
must match, and ``X-Lark-Signature`` is SHA-256 of timestamp + nonce + Encrypt Key + body.
This channel requires the Encrypt Key (so every event is signed) and, before the SDK, also
refuses a signature that does not match (compared in constant time) or whose timestamp is
outside the replay window. The callback is answered at once (the platform wants it within
three seconds); the turn runs after, and its reply goes back with the IM API — as a reply to
the message that started it; messages pushed later are sent to the chat.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lark_oapi.api.im.v1 import (
    CreateMessageRequest,
    CreateMessageRequestBody,
    P2ImMessageReceiveV1,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
    UpdateMessageRequest,
    UpdateMessageRequestBody,
)
from lark_oapi.client import Client
from lark_oapi.core.const import FEISHU_DOMAIN
from lark_oapi.core.enum import LogLevel
from lark_oapi.core.model import RawRequest
from lark_oapi.event.dispatcher_handler import EventDispatcherHandler
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

__all__ = ["FeishuChannel", "FeishuConfig"]

logger = logging.getLogger(__name__)

_MENTION = re.compile(r"@_user_\d+\s*")
_MAX_TEXT = 30_000


@dataclass(frozen=True, kw_only=True)
class FeishuConfig(ChannelConfig):
    """A Feishu (or Lark) app.

    Attributes:
        app_id: The app's App ID.
        app_secret: The app's App Secret.
        encrypt_key: The Encrypt Key of its event subscription (required: events are then
            encrypted and signed).
        verification_token: The Verification Token of its event subscription.
        path: The event request URL's path on this server.
        domain: The open platform (``https://open.feishu.cn``; Lark:
            ``https://open.larksuite.com``; a loopback ``http://`` URL for a test double).
        window_seconds: How old (or far ahead) a signed callback's timestamp may be.
        thread_sessions: In a group, a message in a thread belongs to that thread's
            conversation (``True``) or to the group's (``False``).
    """

    name: str = "feishu"
    app_id: str
    app_secret: str
    encrypt_key: str
    verification_token: str
    path: str = "/channels/feishu/events"
    domain: str = FEISHU_DOMAIN
    window_seconds: float = 300.0
    thread_sessions: bool = True

    def __post_init__(self) -> None:
        ChannelConfig.__post_init__(self)
        require_text(self, "app_id", self.app_id)
        require_text(self, "app_secret", self.app_secret)
        require_text(self, "encrypt_key", self.encrypt_key)
        require_text(self, "verification_token", self.verification_token)
        if not isinstance(self.path, str) or not self.path.startswith("/"):
            raise ValueError("FeishuConfig.path must start with '/'")
        if not isinstance(self.window_seconds, int | float) or not 0 < self.window_seconds <= 3600:
            raise ValueError("FeishuConfig.window_seconds must be above 0 and at most 3600")


class FeishuChannel(ChatChannel):
    """Feishu / Lark through lark-oapi (see the module docstring)."""

    config: FeishuConfig

    def __init__(self, config: FeishuConfig) -> None:
        if not isinstance(config, FeishuConfig):
            raise TypeError("FeishuChannel needs a FeishuConfig")
        super().__init__(config)
        try:
            self.client = (
                Client.builder()
                .app_id(config.app_id)
                .app_secret(config.app_secret)
                .domain(config.domain)
                .log_level(LogLevel.WARNING)
                .build()
            )
        except ValueError as exc:
            raise ValueError(f"FeishuConfig.domain: {exc}") from None
        self.dispatcher = (
            EventDispatcherHandler.builder(config.encrypt_key, config.verification_token)
            .register_p2_im_message_receive_v1(self._on_message)
            .build()
        )

    def routes(self) -> Sequence[BaseRoute]:
        return [Route(self.config.path, self._inbound, methods=["POST"])]

    async def start(self, gateway: Gateway) -> None:
        await super().start(gateway)

    # -------------------------------------------------------------- inbound
    async def _inbound(self, request: Request) -> Response:
        if self._gateway is None:
            return Response("the channel is not running", status_code=503)
        body = await request.body()
        problem = self._unsigned(request, body)
        if problem is not None:
            return Response(json.dumps({"msg": problem}), 401, media_type="application/json")
        raw = RawRequest()
        raw.uri = request.url.path
        raw.body = body
        raw.headers = {k: v for k, v in request.headers.items()}
        # the canonical header names the SDK reads
        for name in ("X-Lark-Request-Timestamp", "X-Lark-Request-Nonce", "X-Lark-Signature"):
            value = request.headers.get(name)
            if value is not None:
                raw.headers[name] = value
        # decrypting and parsing is quick CPU work; the handler only schedules the turn
        answer = self.dispatcher.do(raw)
        status = answer.status_code or 200
        if status >= 500:  # the SDK says 500 for any refusal: a bad token or body is the caller's
            status = 400
        return Response(answer.content or b"", status, media_type="application/json")

    def _unsigned(self, request: Request, body: bytes) -> str | None:
        """Why a callback's signature is refused (``None``: signed and fresh, or it carries
        no signature at all — the SDK then accepts only the URL verification challenge)."""
        timestamp = request.headers.get("X-Lark-Request-Timestamp")
        nonce = request.headers.get("X-Lark-Request-Nonce")
        signature = request.headers.get("X-Lark-Signature")
        if timestamp is None and nonce is None and signature is None:
            if _is_challenge(body, self.config.encrypt_key):
                return None
            return "the callback is not signed"
        if not timestamp or nonce is None or not signature:
            return "the callback's signature headers are incomplete"
        if (
            not timestamp.isdigit()
            or abs(time.time() - int(timestamp)) > self.config.window_seconds
        ):
            return "the signature timestamp is outside the replay window"
        expected = hashlib.sha256(
            (timestamp + nonce + self.config.encrypt_key).encode() + body
        ).hexdigest()
        if not hmac.compare_digest(expected, signature):
            return "signature verification failed"
        return None

    def _on_message(self, data: P2ImMessageReceiveV1) -> None:
        event, header = data.event, data.header
        message = event.message if event is not None else None
        sender = event.sender if event is not None else None
        if message is None or sender is None or header is None:
            return
        if sender.sender_type not in (None, "user"):
            return  # apps (this bot included) start no turn
        open_id = sender.sender_id.open_id if sender.sender_id is not None else None
        chat = message.chat_id
        if not open_id or not chat or message.message_type != "text":
            return
        try:
            text = json.loads(message.content or "{}").get("text", "")
        except (ValueError, AttributeError):
            return
        text = _MENTION.sub("", str(text)).strip()
        if not text:
            return
        account = header.app_id or self.config.app_id
        if message.chat_type == "p2p":
            peer = open_id
        else:
            thread = message.thread_id or message.root_id
            peer = f"{chat}/{thread}" if thread and self.config.thread_sessions else chat
        address = {"chat_id": chat, "message_id": message.message_id}
        if message.thread_id:
            address["thread_id"] = message.thread_id
        self.accept(
            Inbound(
                ChannelIdentity(self.name, account, peer),
                Address(self.name, {k: v for k, v in address.items() if v}),
                text[:_MAX_TEXT],
                header.event_id,
            )
        )

    # ------------------------------------------------------------- outbound
    # the SDK's requests are synchronous (its token fetch always is): they run in a thread
    async def send(
        self, address: Address, text: str, *, kind: MessageKind = "message"
    ) -> str | None:
        content = json.dumps({"text": text[:_MAX_TEXT]}, ensure_ascii=False)
        to = address.get("message_id")
        if kind in ("reply", "update", "question", "notice") and to:
            request: Any = (
                ReplyMessageRequest.builder()
                .message_id(to)
                .request_body(
                    ReplyMessageRequestBody.builder()
                    .msg_type("text")
                    .content(content)
                    .reply_in_thread(bool(address.get("thread_id")))
                    .build()
                )
                .build()
            )
            response = await asyncio.to_thread(self.client.im.v1.message.reply, request)
        else:
            chat = address.get("chat_id")
            if chat is None:
                raise ValueError(f"a Feishu address needs a chat_id: {address.data}")
            request = (
                CreateMessageRequest.builder()
                .receive_id_type("chat_id")
                .request_body(
                    CreateMessageRequestBody.builder()
                    .receive_id(chat)
                    .msg_type("text")
                    .content(content)
                    .build()
                )
                .build()
            )
            response = await asyncio.to_thread(self.client.im.v1.message.create, request)
        if not response.success():
            raise RuntimeError(f"Feishu refused the message: {response.code} {response.msg}")
        return response.data.message_id if response.data is not None else None

    async def update(self, address: Address, ref: str, text: str) -> bool:
        content = json.dumps({"text": text[:_MAX_TEXT]}, ensure_ascii=False)
        request = (
            UpdateMessageRequest.builder()
            .message_id(ref)
            .request_body(
                UpdateMessageRequestBody.builder().msg_type("text").content(content).build()
            )
            .build()
        )
        response = await asyncio.to_thread(self.client.im.v1.message.update, request)
        return bool(response.success())


def _is_challenge(body: bytes, encrypt_key: str) -> bool:
    """Whether an unsigned callback is the platform's URL verification (which it does not
    sign); the SDK still checks its verification token."""
    from lark_oapi.core.utils import AESCipher

    try:
        data = json.loads(body)
        if isinstance(data, dict) and isinstance(data.get("encrypt"), str):
            data = json.loads(AESCipher(encrypt_key).decrypt_str(data["encrypt"]))
    except Exception:
        return False
    return isinstance(data, dict) and data.get("type") == "url_verification"
