"""Read-only queries between capabilities: what one capability may ask of the others.

Capabilities do not reach into each other (no attribute of another capability is set, none of
its internals read). Instead a capability *answers* queries with small read-only views
(:meth:`~harnessed.capabilities.Capability.views`), and another one asks for a view by its type
at setup (:meth:`~harnessed.capabilities.CapabilityHost.query`). A view holds values and query
functions; one whose answer is only known once its owner is set up (or changes later) is a
function, asked when the answer is needed — so the order in which capabilities are set up does
not matter. Every view shape is in this module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from harnessed.runtime import RuntimeContext

__all__ = ["SkillFolders", "SkillsSandbox"]


@dataclass(frozen=True, slots=True)
class SkillFolders:
    """The agent's skill folders, as the tools that show them see them (``Skills`` answers)."""

    model_may_edit: bool
    """The application lets the model change the skills (``Skills(model_edits_skills=True)``):
    the file tools and a sandbox leave ``skills/`` writable."""
    mounts: Callable[[RuntimeContext], Awaitable[list[tuple[str, str]]]]
    """For a caller: ``(folder on the host, path inside a sandbox)`` of each skill it sees, for
    a sandbox to bind read-only."""


@dataclass(frozen=True, slots=True)
class SkillsSandbox:
    """Whether commands run in a sandbox that mounts the skill folders (``Shell`` answers): the
    skills then give the model their paths inside the sandbox, not the host's."""

    mounted: Callable[[], bool]
