"""Bearer tokens → user ids: a token map, a callback (sync or async), bad configuration."""

from __future__ import annotations

import pytest

from harnessed.gateway import BearerAuth


async def test_tokens_map_to_users_and_unknown_ones_to_none() -> None:
    auth = BearerAuth({"token-of-alice": "alice"})
    assert await auth.user_for("token-of-alice") == "alice"
    assert await auth.user_for("token-of-bob") is None
    assert await auth.user_for("") is None


async def test_a_callback_decides_tokens_the_map_does_not_know() -> None:
    seen: list[str] = []

    async def lookup(token: str) -> str | None:
        seen.append(token)
        return "carol" if token == "from-the-database" else None

    auth = BearerAuth({"token-of-alice": "alice"}, resolve=lookup)
    assert await auth.user_for("token-of-alice") == "alice" and seen == []
    assert await auth.user_for("from-the-database") == "carol"
    assert await auth.user_for("nope") is None
    sync = BearerAuth(resolve=lambda token: "dave" if token.startswith("d") else "")
    assert await sync.user_for("d-token") == "dave"
    assert await sync.user_for("x-token") is None  # an empty user id is no user


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="tokens or a resolve"):
        BearerAuth()
    with pytest.raises(ValueError, match="at least 8"):
        BearerAuth({"short": "alice"})
    with pytest.raises(ValueError, match="non-empty"):
        BearerAuth({"long-enough-token": ""})
