"""Names a package exports but imports on first use (PEP 562).

A package lists ``name → module`` and binds what :func:`lazy_exports` returns to its module
``__getattr__`` and ``__dir__``; it keeps the same names in an ``if TYPE_CHECKING:`` import
block for type checkers. ``import harnessed`` then costs almost nothing, and
``from harnessed import HarnessAgent`` loads what the agent needs, not every optional part.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for ``names`` (name → module)."""

    def module_getattr(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value

    def module_dir() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return module_getattr, module_dir
