"""Typed provider errors, shared by every model adapter."""

from __future__ import annotations

import re

__all__ = [
    "ContextOverflowError",
    "ModelError",
    "RateLimitError",
    "is_context_overflow_message",
    "stated_window",
]

# Phrases providers use when a request does not fit the window (OpenAI, Anthropic, vLLM,
# Ollama, DashScope, Gemini-compatible gateways ...). Matched case-insensitively.
_OVERFLOW_PATTERNS = re.compile(
    "|".join(
        [
            r"context_length_exceeded",
            r"context length exceeded",
            r"maximum context length",
            r"maximum context",
            r"context window",
            r"prompt is too long",
            r"too many tokens",
            r"token limit",
            r"reduce the length",
            r"input is too long",
            r"exceeds the model'?s? (?:maximum )?context",
            r"request too large",
            r"range of input length",
        ]
    ),
    re.IGNORECASE,
)


# How servers state their window inside an overflow message: OpenAI / vLLM / llama-cpp-python
# ("maximum context length is 4096 tokens"), llama.cpp ("available context size (4096
# tokens)"), Anthropic ("210000 tokens > 200000 maximum"), DashScope ("[1, 30720]").
_STATED_WINDOW = [
    re.compile(r"maximum context length (?:is|of) (\d+)", re.IGNORECASE),
    re.compile(r"context size \((\d+) tokens?\)", re.IGNORECASE),
    re.compile(r"context window (?:is|of) (\d+)", re.IGNORECASE),
    re.compile(r"\d+ tokens? > (\d+) maximum", re.IGNORECASE),
    re.compile(r"range of input length should be \[1, ?(\d+)\]", re.IGNORECASE),
]


def is_context_overflow_message(text: str) -> bool:
    """Whether a provider error message says the request exceeded the context window."""
    return bool(_OVERFLOW_PATTERNS.search(text))


def stated_window(text: str) -> int | None:
    """The context window a provider's overflow message states, if it states one."""
    for pattern in _STATED_WINDOW:
        match = pattern.search(text)
        if match and int(match.group(1)) > 0:
            return int(match.group(1))
    return None


class ModelError(Exception):
    """A model request failed. ``status_code`` is the HTTP status when there was one."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        provider: str | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.provider = provider
        self.retryable = retryable


class RateLimitError(ModelError):
    """The provider refused the request for rate or quota reasons (HTTP 429)."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = 429,
        provider: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code, provider=provider, retryable=True)
        self.retry_after = retry_after


class ContextOverflowError(ModelError):
    """The request did not fit the model's context window."""

    def __init__(
        self, message: str, *, status_code: int | None = 400, provider: str | None = None
    ) -> None:
        super().__init__(message, status_code=status_code, provider=provider, retryable=False)
