"""CapabilitySet: an agent's capabilities, with the overridden hooks found once at setup.

The loop asks the set for the capabilities of one hook (``caps.before_tool_call`` …); a hook
no capability overrides is an empty tuple, so the loop skips it without a call.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import TypeVar

from harnessed.capabilities.base import (
    CallContext,
    CallEnd,
    Capability,
    ModelCall,
    check_name,
    overrides,
)
from harnessed.capabilities.materials import Material
from harnessed.capabilities.state_blocks import StateBlock
from harnessed.events import Event
from harnessed.messages import ToolResultBlock, ToolUseBlock
from harnessed.models.base import ToolSchema
from harnessed.state.agent_state import AgentState
from harnessed.tools.base import Tool

__all__ = ["CapabilitySet"]

logger = logging.getLogger(__name__)

C = TypeVar("C", bound=Capability)
V = TypeVar("V")


class CapabilitySet:
    """The capabilities of one agent, in order."""

    def __init__(self, capabilities: Iterable[Capability] = ()) -> None:
        self._all: list[Capability] = []
        self._names: set[str] = set()
        for capability in capabilities:
            self.add(capability)

    def add(self, capability: Capability) -> None:
        if not isinstance(capability, Capability):
            raise TypeError(
                f"capabilities must be Capability objects (subclass harnessed.Capability), got "
                f"{capability!r}"
            )
        name = check_name(capability)
        if name in self._names:
            raise ValueError(f"two capabilities are named {name!r}; give one another name")
        if any(c is capability for c in self._all):
            raise ValueError(f"capability {name!r} was passed twice")
        self._names.add(name)
        self._all.append(capability)
        self._index()

    def _index(self) -> None:
        def having(hook: str) -> tuple[Capability, ...]:
            return tuple(c for c in self._all if overrides(c, hook))

        self.call_instructions = having("call_instructions")
        self.filter_tools = having("filter_tools")
        self.state_block_providers = having("state_blocks")
        self.before_call = having("before_call")
        self.after_call = tuple(reversed(having("after_call")))
        self.before_model_request = having("before_model_request")
        self.after_model_request = tuple(reversed(having("after_model_request")))
        self.before_tool_call = having("before_tool_call")
        self.after_tool_call = tuple(reversed(having("after_tool_call")))
        self.on_event = having("on_event")
        self.closers = tuple(reversed(having("close")))

    def __iter__(self) -> Iterator[Capability]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def query(self, view: type[V]) -> V | None:
        """The first view of type ``view`` a capability answers with (:meth:`Capability.views`)."""
        for capability in self._all:
            for answer in capability.views():
                if isinstance(answer, view):
                    return answer
        return None

    def find(self, kind: type[C]) -> C | None:
        """The first capability of type ``kind``."""
        for capability in self._all:
            if isinstance(capability, kind):
                return capability
        return None

    # ----------------------------------------------------------------- dispatch
    def state_blocks(self, state: AgentState) -> list[StateBlock]:
        blocks: list[StateBlock] = []
        for capability in self.state_block_providers:
            for block in capability.state_blocks(state):
                if not isinstance(block, StateBlock):
                    raise TypeError(
                        f"capability {capability.capability_name!r} returned {block!r} from "
                        "state_blocks(); expected StateBlock objects"
                    )
                blocks.append(block)
        return blocks

    async def run_call_instructions(self, call: CallContext) -> tuple[Material, ...]:
        """The call's instructions from every capability that gives some, in order."""
        found: list[Material] = []
        for capability in self.call_instructions:
            given = await capability.call_instructions(call)
            name = capability.capability_name
            if isinstance(given, str):
                if given.strip():
                    found.append(
                        Material(
                            f"instruction/{name}",
                            "instruction",
                            "capability",
                            name,
                            "system",
                            given,
                            required=True,
                            priority=50,
                        )
                    )
            elif isinstance(given, Material):
                if given.placement != "system":
                    raise ValueError(
                        f"capability {name!r} gave {given.id!r} with placement "
                        f"{given.placement!r} from call_instructions(); instructions are placed "
                        "in 'system'"
                    )
                found.append(given)
            elif given is not None:
                raise TypeError(
                    f"call_instructions of capability {name!r} returned {given!r}; expected a "
                    "text, a Material or None"
                )
        return tuple(found)

    def run_filter_tools(
        self, call: CallContext, tools: tuple[ToolSchema, ...]
    ) -> tuple[ToolSchema, ...]:
        """The tools offered on this request, each capability filtering what the one before
        left."""
        for capability in self.filter_tools:
            kept = capability.filter_tools(call, tools)
            if kept is tools:
                continue
            kept = tuple(kept)
            given = {t.name for t in tools}
            added = [t.name for t in kept if t.name not in given]
            if added:
                raise ValueError(
                    f"filter_tools of capability {capability.capability_name!r} returned tools "
                    f"it was not given: {added}; it may only leave tools out"
                )
            tools = kept
        return tools

    async def run_before_call(self, call: CallContext) -> None:
        for capability in self.before_call:
            await capability.before_call(call)

    async def run_after_call(self, call: CallContext, end: CallEnd) -> None:
        for capability in self.after_call:
            try:
                await capability.after_call(call, end)
            except Exception:
                logger.exception("after_call of capability %r failed", capability.capability_name)

    async def run_before_model_request(self, call: CallContext) -> None:
        for capability in self.before_model_request:
            await capability.before_model_request(call)

    async def run_after_model_request(self, call: CallContext, model_call: ModelCall) -> None:
        for capability in self.after_model_request:
            await capability.after_model_request(call, model_call)

    async def run_before_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
    ) -> str | None:
        for capability in self.before_tool_call:
            refusal = await capability.before_tool_call(call, tool_call, tool)
            if refusal is not None:
                if not isinstance(refusal, str):
                    raise TypeError(
                        f"before_tool_call of capability {capability.capability_name!r} returned "
                        f"{refusal!r}; expected None or the text of the refusal"
                    )
                return refusal
        return None

    async def run_after_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
    ) -> ToolResultBlock:
        for capability in self.after_tool_call:
            replaced = await capability.after_tool_call(call, tool_call, result)
            if replaced is not None:
                if (
                    not isinstance(replaced, ToolResultBlock)
                    or replaced.tool_use_id != tool_call.id
                ):
                    raise TypeError(
                        f"after_tool_call of capability {capability.capability_name!r} must "
                        f"return None or a ToolResultBlock for call {tool_call.id!r}"
                    )
                result = replaced
        return result

    def observe(self, call: CallContext, event: Event) -> None:
        for capability in self.on_event:
            try:
                capability.on_event(call, event)
            except Exception:
                logger.exception("on_event of capability %r failed", capability.capability_name)

    async def close(self) -> None:
        for capability in self.closers:
            await capability.close()
