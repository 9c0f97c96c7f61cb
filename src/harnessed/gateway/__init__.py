"""Channels to agents: the gateway (identity → session, routing by agent name, one turn per
session), the HTTP channel (FastAPI + server-sent events) and its web chat page.

The HTTP parts need the ``serve`` extra: ``pip install 'harnessed[serve]'``.
"""

from typing import TYPE_CHECKING

from harnessed.gateway.auth import BearerAuth, TokenResolver
from harnessed.gateway.gateway import SESSION_CREATED, Gateway, UnknownAgentError
from harnessed.gateway.identity import ChannelIdentity, check_session_id

if TYPE_CHECKING:
    from harnessed.gateway.http import create_app

__all__ = [
    "SESSION_CREATED",
    "BearerAuth",
    "ChannelIdentity",
    "Gateway",
    "TokenResolver",
    "UnknownAgentError",
    "check_session_id",
    "create_app",
]


def __getattr__(name: str) -> object:
    if name == "create_app":  # FastAPI is an optional extra: import it only when asked
        from harnessed.gateway.http import create_app

        return create_app
    raise AttributeError(f"module 'harnessed.gateway' has no attribute {name!r}")
