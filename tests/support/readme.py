"""The README's and the docs' code blocks that tests run as written (see ``tests.support.docs``)."""

from __future__ import annotations

from tests.support.docs import README, marked_example

__all__ = ["README", "marked_example"]
