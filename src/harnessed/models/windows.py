"""Known context windows, used when a model adapter is not told its window explicitly."""

from __future__ import annotations

__all__ = ["known_context_window"]

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


def known_context_window(model: str) -> int | None:
    """The published window of a well-known model name, or ``None`` when unknown."""
    name = model.lower().rsplit("/", 1)[-1]
    best: str | None = None
    for prefix in _WINDOWS:
        if name.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return _WINDOWS[best] if best is not None else None
