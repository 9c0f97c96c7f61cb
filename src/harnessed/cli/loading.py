"""Loading the application's agent for ``harnessed serve`` and ``harnessed chat``."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

__all__ = ["load_object"]


def load_object(spec: str) -> Any:
    """Import ``module:attribute`` (attributes may be dotted); a callable without required
    arguments is called (a factory). The current directory is importable, like ``python -m``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected module:object (e.g. myapp.agents:agent), got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attr!r}") from None
    if callable(target) and not isinstance(target, type) and _no_required_args(target):
        from harnessed.agent import HarnessAgent
        from harnessed.gateway.gateway import Gateway

        if not isinstance(target, HarnessAgent | Gateway):
            target = target()
    return target


def _no_required_args(fn: Any) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not inspect.Parameter.empty
        or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        for p in signature.parameters.values()
    )
