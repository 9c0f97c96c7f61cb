"""Prompt caching: the key that tells a provider which requests share a prefix."""

from __future__ import annotations

import hashlib

__all__ = ["cache_key"]


def cache_key(agent_id: str, user_id: str, session_id: str) -> str:
    """A stable, opaque key of one session: the same (agent, user, session) always gives the
    same key, and the key reveals none of them (a hash, so ids never reach the provider)."""
    raw = "\x00".join((agent_id, user_id, session_id)).encode("utf-8", "surrogatepass")
    return "hs-" + hashlib.sha256(raw).hexdigest()[:32]
