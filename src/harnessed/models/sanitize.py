"""Text repair before a request leaves: every string of a request payload as valid UTF-8.

A lone UTF-16 surrogate (from a tool that decoded bytes with ``surrogateescape``, a file name,
a gateway that split an emoji) cannot be encoded, and an SDK serialising the request would
fail with a raw ``UnicodeEncodeError``. Adapters pass their payload through :func:`sanitize`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from harnessed.messages import clean_text

__all__ = ["sanitize"]

T = TypeVar("T")


def sanitize(value: T) -> T:
    """``value`` with :func:`~harnessed.messages.clean_text` applied to every string inside
    (dict keys and values, list items); other values are returned as they are."""
    return _clean(value)  # type: ignore[no-any-return]


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_clean(v) for v in value)
    return value
