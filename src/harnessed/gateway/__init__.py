"""Channels to agents: the gateway (identity → session, routing by agent name, one turn per
session), the HTTP channel (FastAPI + server-sent events) and its web chat page.

The HTTP parts need the ``serve`` extra: ``pip install 'harnessed[serve]'``.
"""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports
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


# FastAPI is an optional extra: the HTTP app is imported only when asked for
__getattr__, __dir__ = lazy_exports(__name__, {"create_app": "harnessed.gateway.http"})
