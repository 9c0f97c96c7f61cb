"""Context windows: what a model adapter knows about its window, and where that came from.

The window is, in order of trust: given by the application (``context_window=``), reported by
the server (vLLM, Ollama, llama.cpp tell it; see :mod:`harnessed.models.discovery`), stated by
the server in an overflow error, or the published window of a well-known model name. A model
whose server rejected a request as too long never keeps a window larger than that request.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from harnessed.models.errors import ContextOverflowError, stated_window

__all__ = [
    "WindowKnowledge",
    "WindowSource",
    "discover_windows",
    "known_context_window",
    "window_source",
]

logger = logging.getLogger(__name__)

WindowSource: TypeAlias = Literal[
    "given", "server", "server_error", "rejected_request", "published", "unknown"
]
"""``given``: ``context_window=``; ``server``: reported by the server's API; ``server_error``:
stated in an overflow error; ``rejected_request``: shrunk below a request the server rejected
without saying its window; ``published``: the known window of the model name."""

# Longest matching prefix wins. Values are the providers' published input windows in tokens.
_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "qwen-max": 32_768,
    "qwen-plus": 131_072,
    "qwen-turbo": 1_000_000,
}

_CHARS_PER_TOKEN = 4
"""Rough size of a token in request JSON, used only to shrink a window no one stated."""


def known_context_window(model: str) -> int | None:
    """The published window of a well-known model name, or ``None`` when unknown."""
    name = model.lower().rsplit("/", 1)[-1]
    best: str | None = None
    for prefix in _WINDOWS:
        if name.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return _WINDOWS[best] if best is not None else None


@dataclass
class WindowKnowledge:
    """A model adapter's window and its source, updated by discovery and by overflow errors."""

    tokens: int | None
    source: WindowSource
    discovered: bool = False
    """Whether asking the server was done (or is pointless); it is asked at most once."""

    @classmethod
    def initial(cls, model: str, given: int | None, *, ask_server: bool) -> WindowKnowledge:
        if given is not None:
            return cls(given, "given", discovered=True)
        published = known_context_window(model)
        return cls(
            published,
            "published" if published is not None else "unknown",
            discovered=not ask_server,
        )

    def reported(self, tokens: int | None) -> None:
        """The server's answer to discovery (``None``: it did not say)."""
        self.discovered = True
        if tokens is not None and self.source != "given":
            self.tokens, self.source = tokens, "server"

    def learn(self, error: ContextOverflowError, request_chars: int) -> None:
        """The server rejected a request of ``request_chars`` characters as too long: take the
        window it states, or assume one clearly smaller than that request, so the next request
        is fitted to something the server accepts (never left sending the same size again)."""
        stated = stated_window(error.message)
        if stated is not None:
            if self.tokens != stated:
                logger.info("the server states a context window of %d tokens", stated)
            self.tokens, self.source = stated, "server_error"
            return
        rejected = max(request_chars // _CHARS_PER_TOKEN, 1)
        if self.tokens is None or self.tokens >= rejected:
            self.tokens, self.source = max(rejected * 3 // 4, 1), "rejected_request"
            logger.warning(
                "the server rejected a request of about %d tokens as too long without stating "
                "its window; assuming %d tokens (pass context_window= to set it)",
                rejected,
                self.tokens,
            )


@runtime_checkable
class DiscoversWindow(Protocol):
    async def discover_context_window(self) -> int | None: ...


async def discover_windows(models: Iterable[Any]) -> None:
    """Ask the server of each model that can tell its window (once per model)."""
    for model in models:
        # the attribute, as isinstance(model, DiscoversWindow) checks it, at a fraction of
        # the cost (this runs before every turn)
        discover = getattr(model, "discover_context_window", None)
        if discover is not None:
            await discover()


def window_source(model: Any) -> str:
    """Where ``model``'s window came from, for manifests (``given`` for models that only
    have a ``context_window``)."""
    source = getattr(model, "context_window_source", None)
    if isinstance(source, str):
        return source
    return "given" if getattr(model, "context_window", None) else "unknown"
