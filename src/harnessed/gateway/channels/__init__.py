"""Channels: the agents where people already talk, and messages the agent sends first
(BEHAVIOUR.md §13 as amended).

* :class:`Channel` is the seam; :class:`ChatChannel` the shared part of chat adapters
  (acknowledge at once, run the turn after, send the reply to the conversation it came from).
* Adapters: :class:`WebhookChannel` (a signed generic webhook; ``webhook`` extra),
  :class:`SlackChannel` (``slack`` extra, slack-bolt), :class:`FeishuChannel` (``feishu``
  extra, lark-oapi); the AG-UI stream of the HTTP channel (``ag-ui`` extra).
* :class:`SessionScope` picks which messages share a session; :class:`Address` is where a
  session was reached, kept in its log, so ``gateway.send(...)`` and finished background tasks
  reach the person.
"""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports
from harnessed.gateway.channels.addresses import ADDRESS_RECORD, AddressBook
from harnessed.gateway.channels.base import (
    Address,
    Channel,
    ChannelConfig,
    ChatChannel,
    Inbound,
    MessageKind,
    answer_of,
)
from harnessed.gateway.channels.scopes import Route, SessionScope, route

if TYPE_CHECKING:
    from harnessed.gateway.channels.feishu import FeishuChannel, FeishuConfig
    from harnessed.gateway.channels.slack import SlackChannel, SlackConfig
    from harnessed.gateway.channels.webhook import WebhookChannel, WebhookConfig

__all__ = [
    "ADDRESS_RECORD",
    "Address",
    "AddressBook",
    "Channel",
    "ChannelConfig",
    "ChatChannel",
    "FeishuChannel",
    "FeishuConfig",
    "Inbound",
    "MessageKind",
    "Route",
    "SessionScope",
    "SlackChannel",
    "SlackConfig",
    "WebhookChannel",
    "WebhookConfig",
    "answer_of",
    "route",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FeishuChannel": "harnessed.gateway.channels.feishu",
        "FeishuConfig": "harnessed.gateway.channels.feishu",
        "SlackChannel": "harnessed.gateway.channels.slack",
        "SlackConfig": "harnessed.gateway.channels.slack",
        "WebhookChannel": "harnessed.gateway.channels.webhook",
        "WebhookConfig": "harnessed.gateway.channels.webhook",
    },
)
