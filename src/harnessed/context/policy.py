"""ContextPolicy: the input budget of every request and who hears about each preparation."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harnessed.tokens import TokenEstimator

if TYPE_CHECKING:
    from harnessed.context.manifest import ContextManifest
    from harnessed.context.materials import Material

__all__ = ["FALLBACK_INPUT_LIMIT", "ContextPolicy", "SelectionPolicy"]

FALLBACK_INPUT_LIMIT = 64_000
"""Input limit used when the model reports no context window."""

POLICY_SCHEMA = "harnessed.context/1"

SelectionPolicy = Callable[[Sequence["Material"]], Sequence[str]]
"""Given the optional materials, return material ids in the order they may be dropped."""


@dataclass(frozen=True, slots=True)
class ContextPolicy:
    """Budget and observation settings for request preparation. ``0`` means "the default"."""

    max_input_tokens: int = 0
    """Upper bound on the input limit (0 = no extra cap)."""
    reserved_output_tokens: int = 0
    """Tokens kept free for the answer (0 = min(4096, window/8), raised to the request's max
    output tokens)."""
    safety_margin_tokens: int = 0
    """Extra tokens kept free because estimates are approximate (0 = window/50)."""
    estimator: TokenEstimator | None = None
    """Token estimator (default: harnessed's approximate estimator)."""
    observer: Callable[[ContextManifest], Any] | None = None
    """Called with every manifest; an observer that raises is logged, never fatal."""
    selection_policy: SelectionPolicy | None = None
    """Order in which optional materials are dropped (may never name required items)."""

    def __post_init__(self) -> None:
        for name in ("max_input_tokens", "reserved_output_tokens", "safety_margin_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"ContextPolicy.{name} must be an int >= 0, got {value!r}")
        if self.observer is not None and not callable(self.observer):
            raise TypeError("ContextPolicy.observer must be callable")
        if self.selection_policy is not None and not callable(self.selection_policy):
            raise TypeError("ContextPolicy.selection_policy must be callable")

    def input_limit(self, context_window: int | None, max_output_tokens: int | None = None) -> int:
        """The most input tokens a request may use."""
        if context_window and context_window > 0:
            reserved = self.reserved_output_tokens or min(4096, context_window // 8)
            if max_output_tokens and not self.reserved_output_tokens:
                reserved = max(reserved, max_output_tokens)
            margin = self.safety_margin_tokens or context_window // 50
            limit = context_window - reserved - margin
        else:
            limit = FALLBACK_INPUT_LIMIT
        if self.max_input_tokens:
            limit = min(limit, self.max_input_tokens)
        return max(limit, 0)

    @property
    def version(self) -> str:
        """Identifies the budget settings in manifests."""
        key = (
            f"{self.max_input_tokens}/{self.reserved_output_tokens}/{self.safety_margin_tokens}/"
            f"{type(self.estimator).__name__}/{self.selection_policy is not None}"
        )
        return f"{POLICY_SCHEMA}:{hashlib.sha256(key.encode()).hexdigest()[:8]}"
