"""Which conversations share a session: a channel identity mapped to a user and session id
under one of the reference's scopes."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from enum import StrEnum

from harnessed.gateway.identity import ChannelIdentity

__all__ = ["Route", "SessionScope", "route"]


class SessionScope(StrEnum):
    """How much of a :class:`ChannelIdentity` picks the session.

    * ``PEER``: one session per peer, whichever channel or account it writes through (give
      the same ``peer`` on every channel for one person to have one conversation everywhere).
    * ``CHANNEL_PEER``: one session per peer on each channel.
    * ``ACCOUNT_CHANNEL_PEER`` (the default): one per peer, channel and bot account — what
      :attr:`ChannelIdentity.session_id` gives.

    Two different peers never share a session under any scope.
    """

    PEER = "peer"
    CHANNEL_PEER = "channel-peer"
    ACCOUNT_CHANNEL_PEER = "account-channel-peer"


@dataclass(frozen=True, slots=True)
class Route:
    """The user id and session id a message of an identity runs under."""

    user_id: str
    session_id: str


def route(
    identity: ChannelIdentity, scope: SessionScope = SessionScope.ACCOUNT_CHANNEL_PEER
) -> Route:
    """The session of ``identity`` under ``scope`` (always the same for the same inputs)."""
    scope = SessionScope(scope)
    if scope is SessionScope.ACCOUNT_CHANNEL_PEER:
        return Route(identity.user_id, identity.session_id)
    if scope is SessionScope.CHANNEL_PEER:
        parts = [scope.value, identity.channel, identity.peer]
        prefix = re.sub(r"[^A-Za-z0-9]", "", identity.channel)[:16] or "ch"
        user = f"{identity.channel}:{identity.peer}"
    else:
        parts = [scope.value, identity.peer]
        prefix, user = "peer", f"peer:{identity.peer}"
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]
    return Route(user, f"{prefix}-{digest}")
