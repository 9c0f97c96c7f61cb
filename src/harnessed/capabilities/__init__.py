"""Capabilities: the one seam through which every subsystem plugs into the agent.

See :mod:`harnessed.capabilities.base` for the protocol and the order in which the agent calls
it, and the README section "Writing a capability".
"""

from harnessed.capabilities.base import (
    HOOKS,
    CallContext,
    CallEnd,
    Capability,
    CapabilityHost,
    ModelCall,
    SourceSpec,
    StateBlock,
    overrides,
)
from harnessed.capabilities.registry import CapabilitySet

__all__ = [
    "HOOKS",
    "CallContext",
    "CallEnd",
    "Capability",
    "CapabilityHost",
    "CapabilitySet",
    "ModelCall",
    "SourceSpec",
    "StateBlock",
    "overrides",
]
