"""Model adapters: the :class:`Model` protocol and the OpenAI, Anthropic and scripted models.

Provider adapters are imported lazily so that ``import harnessed`` never pays for a provider
SDK that is not used (the ``anthropic`` SDK in particular is large and optional).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports
from harnessed.models.base import (
    USAGE_KEY,
    Model,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    RetryNotice,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
    ToolSchema,
    Usage,
    collect,
)
from harnessed.models.errors import ContextOverflowError, ModelError, RateLimitError
from harnessed.models.retry import RetryPolicy

if TYPE_CHECKING:
    from harnessed.models.anthropic import AnthropicModel
    from harnessed.models.openai import OpenAIChatModel
    from harnessed.models.registry import resolve_model
    from harnessed.models.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall

__all__ = [
    "AnthropicModel",
    "ContextOverflowError",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChatModel",
    "RateLimitError",
    "RetryNotice",
    "RetryPolicy",
    "ScriptedModel",
    "ScriptedResponse",
    "ScriptedToolCall",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallReady",
    "ToolSchema",
    "USAGE_KEY",
    "Usage",
    "collect",
    "resolve_model",
]

_LAZY = {
    "AnthropicModel": "harnessed.models.anthropic",
    "OpenAIChatModel": "harnessed.models.openai",
    "ScriptedModel": "harnessed.models.scripted",
    "ScriptedResponse": "harnessed.models.scripted",
    "ScriptedToolCall": "harnessed.models.scripted",
    "resolve_model": "harnessed.models.registry",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
