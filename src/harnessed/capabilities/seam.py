"""The seam before every model request: a preparer turns state into the request to send."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harnessed.capabilities.materials import Material
from harnessed.models.base import Model, ModelRequest, Purpose
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState

__all__ = ["PrepareInfo", "RequestPreparer", "passthrough"]


def _ignore(name: str, data: Mapping[str, Any]) -> None:
    return None


@dataclass(frozen=True, slots=True)
class PrepareInfo:
    """What a preparer knows about the request it prepares."""

    agent_name: str
    runtime: RuntimeContext
    model: Model
    model_call_id: str
    iteration: int
    purpose: Purpose = "reasoning"
    retry: bool = False
    """True when the request is prepared again after a recoverable provider failure."""
    force_compaction: bool = False
    """Compact as hard as possible (overflow recovery: keep the last message group + summary)."""
    emit: Callable[[str, Mapping[str, Any]], None] = field(default=_ignore)
    """Send a custom event (such as ``context_build``) to ``stream_events``."""
    run_cache: MutableMapping[str, Any] = field(default_factory=dict)
    """Scratch space shared by every preparation of one call (e.g. workspace files, which are
    read once per call)."""
    instructions: tuple[Material, ...] = ()
    """The call's instructions from the capabilities (:meth:`Capability.call_instructions`,
    placement ``system``), to place after the agent's own; the same for every reasoning request
    of the call."""


USAGE_SINK = "usage_sink"
"""The ``PrepareInfo.run_cache`` entry (when present) that counts the usage of a request made
while preparing one, a summary for instance, toward the call: called with the response's
``Usage`` (or ``None``), the model names to price it by, and the provider's name."""


class RequestPreparer(Protocol):
    """Called before every model request with the live state and the draft request.

    It returns the request to send. It may change ``state`` (compaction, eviction) only when the
    returned request is valid; raising stops the run before the model is called.
    """

    async def __call__(
        self, state: AgentState, request: ModelRequest, info: PrepareInfo
    ) -> ModelRequest: ...


async def passthrough(state: AgentState, request: ModelRequest, info: PrepareInfo) -> ModelRequest:
    """The identity preparer: sends the draft request unchanged."""
    return request
