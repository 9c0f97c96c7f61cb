"""XML escaping for everything placed inside the harness's tags."""

from __future__ import annotations

__all__ = ["escape"]

_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"))


def escape(text: str) -> str:
    """Escape ``& < > "`` so material can never close or forge a tag.

    Chained ``str.replace`` (``&`` first): each is one pass in C, about twenty times faster
    than ``str.translate`` with a mapping, and this runs over every instruction and reference
    of every request."""
    for char, entity in _ESCAPES:
        if char in text:
            text = text.replace(char, entity)
    return text
