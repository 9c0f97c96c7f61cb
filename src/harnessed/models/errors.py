"""Typed provider errors, shared by every model adapter."""

from __future__ import annotations

import re

__all__ = [
    "ContextOverflowError",
    "ModelError",
    "RateLimitError",
    "is_context_overflow_message",
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


def is_context_overflow_message(text: str) -> bool:
    """Whether a provider error message says the request exceeded the context window."""
    return bool(_OVERFLOW_PATTERNS.search(text))


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
