"""XML escaping for everything placed inside the harness's tags."""

from __future__ import annotations

__all__ = ["escape"]

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


def escape(text: str) -> str:
    """Escape ``& < > "`` so material can never close or forge a tag."""
    return text.translate(_ESCAPES)
