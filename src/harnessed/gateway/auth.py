"""Bearer tokens → user ids for the HTTP channel."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable, Mapping

__all__ = ["BearerAuth", "TokenResolver"]

TokenResolver = Callable[[str], "str | Awaitable[str | None] | None"]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class BearerAuth:
    """Who a bearer token belongs to: a fixed token map, a callback, or both.

    Args:
        tokens: token → user id. Tokens are kept only as SHA-256 digests and looked up by
            digest, so a lookup's time says nothing about the token.
        resolve: A function (sync or async) of the token returning the user id, or ``None``
            for an unknown token; asked when the map does not know the token.
    """

    def __init__(
        self,
        tokens: Mapping[str, str] | None = None,
        *,
        resolve: TokenResolver | None = None,
    ) -> None:
        if not tokens and resolve is None:
            raise ValueError("BearerAuth needs tokens or a resolve callback")
        self._users: dict[bytes, str] = {}
        for token, user in (tokens or {}).items():
            if not isinstance(token, str) or len(token) < 8:
                raise ValueError("BearerAuth tokens must be strings of at least 8 characters")
            if not isinstance(user, str) or not user:
                raise ValueError(f"BearerAuth user id for a token must be non-empty: {user!r}")
            self._users[_digest(token)] = user
        self._resolve = resolve

    async def user_for(self, token: str) -> str | None:
        """The user id of ``token``, or ``None`` when it is not valid."""
        if not token:
            return None
        user = self._users.get(_digest(token))
        if user is None and self._resolve is not None:
            found = self._resolve(token)
            if inspect.isawaitable(found):
                found = await found
            user = found if isinstance(found, str) and found else None
        return user
