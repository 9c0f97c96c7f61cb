"""``Toolset``: tools written as the methods of one class that holds what they share.

A feature whose tools share configuration (a workspace, a store, a capability) writes them as
methods marked with :func:`toolset_tool` on a :class:`Toolset` subclass instead of closures
inside a factory function. Each method is an ordinary, testable method; its docstring and
type hints give the tool's description and schema exactly as :func:`~harnessed.tool` does for
a function. :meth:`Toolset.tools` builds the :class:`~harnessed.tools.base.Tool` objects once
per instance, in the order the methods are defined.

    class Greetings(Toolset):
        def __init__(self, greeting: str) -> None:
            self.greeting = greeting

        @toolset_tool(read_only=True)
        async def greet(self, name: str) -> str:
            \"\"\"Greet someone.\"\"\"
            return f"{self.greeting}, {name}"

    Greetings("Hello").tools()  # [Tool(name="greet", ...)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from harnessed.tools.base import Tool
from harnessed.tools.decorator import tool

__all__ = ["Toolset", "toolset_tool"]

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__harnessed_toolset_tool__"


def toolset_tool(
    *,
    name: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool | None = None,
    destructive: bool = False,
) -> Callable[[F], F]:
    """Mark a :class:`Toolset` method as a tool; the options are those of :func:`tool`."""
    options = {
        "name": name,
        "read_only": read_only,
        "concurrency_safe": concurrency_safe,
        "destructive": destructive,
    }

    def mark(method: F) -> F:
        setattr(method, _MARK, options)
        return method

    return mark


class Toolset:
    """A group of tools sharing one object's state; subclasses mark methods as tools."""

    _built: list[Tool] | None = None

    def tools(self) -> list[Tool]:
        """The marked methods as tools, bound to this instance (built once, then reused)."""
        if self._built is None:
            self._built = [
                self.finish(tool(**options)(getattr(self, attr)))
                for attr, options in _marked(type(self))
            ]
        return list(self._built)

    def finish(self, built: Tool) -> Tool:
        """Adjust one built tool (its description or schema) before it is offered; once."""
        return built


def _marked(cls: type) -> list[tuple[str, dict[str, Any]]]:
    """The marked methods of ``cls`` in definition order (a base class's first)."""
    found: dict[str, dict[str, Any]] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            options = getattr(value, _MARK, None)
            if options is not None:
                found[attr] = options
            elif attr in found:  # overridden without the mark: no longer a tool
                del found[attr]
    return list(found.items())
