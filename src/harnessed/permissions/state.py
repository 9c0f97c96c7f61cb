"""The session's permission settings: the ``permissions`` section of the agent state.

JSON data: ``{"mode": ..., "rules": [...], "grants": [...]}`` (each optional; see
:meth:`~harnessed.permissions.policy.PermissionSettings.resolve`). The value is a read-only
mapping: change it with ``state.put(PERMISSIONS, {**state.get(PERMISSIONS), ...})``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from harnessed.state.sections import StateSection

__all__ = ["PERMISSIONS"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _decode(data: Any) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ValueError(
            f"the permissions section must be a JSON object, got {type(data).__name__}"
        )
    return MappingProxyType(copy.deepcopy(dict(data)))


def _encode(settings: Mapping[str, Any]) -> dict[str, Any] | None:
    return copy.deepcopy(dict(settings)) or None


PERMISSIONS: StateSection[Mapping[str, Any]] = StateSection(
    "permissions", decode=_decode, encode=_encode, default=lambda: _EMPTY
)
"""The session's permission mode, rules and grants."""
