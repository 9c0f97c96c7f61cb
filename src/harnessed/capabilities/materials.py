"""Materials: the pieces a request is assembled from, each with the identity the manifest records.

A capability gives per-call instructions as materials (:meth:`Capability.call_instructions`);
the context compiler builds the rest (the system prompt, ``AGENTS.md``, sources, workspace
references) in :mod:`harnessed.context.materials`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from harnessed.capabilities.sources import content_revision

__all__ = ["Condenser", "Material", "Placement"]

Placement: TypeAlias = Literal["system", "runtime", "reference"]


class Condenser(Protocol):
    """Makes a smaller version of a material when the request does not fit.

    Called by the compiler's fitting step with ``excess`` (how many tokens the request is over
    its limit, in the units of ``count``) and ``count`` (the compiler's token count of a text).
    Returns a smaller material with the same id, whose ``omits`` names every part it has left
    out so far (each becomes ``omitted_for_budget:<part>`` in the manifest), or ``None`` when it
    cannot get smaller (an optional material is then dropped whole; a required one stays).
    """

    def __call__(self, excess: int, count: Callable[[str], int]) -> Material | None: ...


@dataclass(frozen=True, slots=True)
class Material:
    """One item of a request with the identity recorded in the manifest."""

    id: str
    """Stable material id, e.g. ``instruction/sys_prompt`` or ``source/build/status``."""
    kind: str
    """``sys_prompt``, ``agents_md``, ``instruction``, ``conventions``, ``memory``,
    ``knowledge``, ``additional``, ``runtime`` or ``reference``."""
    source_type: str
    """Where it came from: ``agent``, ``workspace`` or ``source``."""
    source_id: str
    placement: Placement
    text: str
    required: bool = False
    priority: int = 0
    revision: str = ""
    condense: Condenser | None = field(default=None, compare=False, repr=False)
    """How to shrink this material to fit the budget (e.g. a listing whose details can go
    before its headings); ``None``: it is kept or dropped whole."""
    omits: tuple[str, ...] = ()
    """Parts of the full material left out of this version (recorded as omitted)."""

    def __post_init__(self) -> None:
        if not self.revision:
            object.__setattr__(self, "revision", content_revision(self.text))

    @property
    def content_hash(self) -> str:
        return "sha256:" + hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def group(self) -> int:
        """Drop order group when fitting: memory first, then knowledge, then the rest."""
        return {"memory": 0, "knowledge": 1}.get(self.kind, 2)
