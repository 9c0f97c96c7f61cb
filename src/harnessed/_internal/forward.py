"""``forward``: a method of one object that calls the same method of one of its parts.

``HarnessAgent`` is composed of parts (the task contract's controls, plan mode's, the
permissions', the session queries); each public method it offers for a part is one line::

    begin_task = forward("_tasks", TaskControls.begin_task)

The forwarding method keeps the part's signature (for type checkers and ``help()``) and its
docstring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["forward"]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def forward(
    attribute: str, method: Callable[Concatenate[T, P], R]
) -> Callable[Concatenate[Any, P], R]:
    """A method that calls ``method`` on ``getattr(self, attribute)`` with its arguments."""

    @functools.wraps(method)
    def forwarding(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, attribute), *args, **kwargs)

    return forwarding
