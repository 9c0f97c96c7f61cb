"""Channel identities: who is talking, through which channel — mapped to a session id."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

__all__ = ["ChannelIdentity", "SESSION_ID_PATTERN", "check_session_id"]

SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
_SESSION_ID = re.compile(SESSION_ID_PATTERN)


def check_session_id(session_id: str) -> str:
    """``session_id`` if it is 1-128 letters, digits, ``_.-`` (starting with a letter or
    digit); otherwise :class:`ValueError` naming the problem."""
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise ValueError(
            f"session id must be 1-128 letters, digits, '_', '.' or '-' and start with a letter "
            f"or digit, got {session_id!r}"
        )
    return session_id


@dataclass(frozen=True, slots=True)
class ChannelIdentity:
    """A conversation partner as a channel sees it.

    ``channel`` names the channel (``"http"``, ``"slack"`` ...), ``account`` the bot or
    workspace account on it, ``peer`` the person or group talking to it. The same identity
    always maps to the same session id.
    """

    channel: str
    account: str
    peer: str

    def __post_init__(self) -> None:
        for name in ("channel", "account", "peer"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"ChannelIdentity.{name} must be a non-empty string")

    @property
    def session_id(self) -> str:
        """A deterministic session id: the channel's name and a digest of the identity."""
        digest = hashlib.sha256(
            json.dumps([self.channel, self.account, self.peer]).encode()
        ).hexdigest()[:24]
        prefix = re.sub(r"[^A-Za-z0-9]", "", self.channel)[:16] or "ch"
        return f"{prefix}-{digest}"

    @property
    def user_id(self) -> str:
        """The user id the identity runs as when the application gives none."""
        return f"{self.channel}:{self.account}:{self.peer}"
