"""Retry with exponential backoff for transient provider failures (429, 5xx, network)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from harnessed.models.base import ModelEvent, RetryNotice
from harnessed.models.errors import ContextOverflowError, ModelError, RateLimitError

__all__ = ["RetryPolicy", "error_from_status", "retrying_stream"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a failed model request is tried again."""

    max_attempts: int = 3
    """Total attempts including the first (1 disables retrying)."""
    initial_delay: float = 0.5
    """Seconds to wait before the second attempt."""
    multiplier: float = 2.0
    """Factor applied to the delay after each failed attempt."""
    max_delay: float = 20.0
    """Upper bound for one wait, also for a provider's ``Retry-After``."""
    jitter: float = 0.1
    """Random extra fraction (0..jitter) added to each wait so clients do not stampede."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be at least 1")
        if self.initial_delay < 0:
            raise ValueError("RetryPolicy.initial_delay must not be negative")
        if self.multiplier < 1:
            raise ValueError("RetryPolicy.multiplier must be at least 1")
        if self.max_delay < 0:
            raise ValueError("RetryPolicy.max_delay must not be negative")
        if not 0 <= self.jitter <= 1:
            raise ValueError("RetryPolicy.jitter must be between 0 and 1")

    def delay(self, attempt: int, error: ModelError | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if isinstance(error, RateLimitError) and error.retry_after is not None:
            base = error.retry_after
        else:
            base = self.initial_delay * self.multiplier ** (attempt - 1)
        base = min(base, self.max_delay)
        return base * (1 + random.uniform(0, self.jitter))


def error_from_status(
    status: int | None,
    message: str,
    *,
    provider: str,
    retry_after: float | None = None,
) -> ModelError:
    """Map an HTTP status and provider message to the matching typed error."""
    from harnessed.models.errors import is_context_overflow_message

    if status == 429:
        return RateLimitError(
            message, status_code=status, provider=provider, retry_after=retry_after
        )
    if status in (None, 400, 413, 422) and is_context_overflow_message(message):
        return ContextOverflowError(message, status_code=status, provider=provider)
    retryable = status is None or status in (408, 409) or status >= 500
    return ModelError(message, status_code=status, provider=provider, retryable=retryable)


async def retrying_stream(
    policy: RetryPolicy,
    open_stream: Callable[[], AsyncIterator[ModelEvent]],
) -> AsyncIterator[ModelEvent]:
    """Yield from ``open_stream()``, opening it again after a retryable failure.

    Before each wait a :class:`RetryNotice` is yielded, so a user sees why nothing happens. A
    failure after the first event has been yielded is raised as it is: the caller has already
    seen part of the answer, so repeating the request would duplicate it. A failure that ends
    the retrying says how many attempts were made.
    """
    attempt = 0
    while True:
        attempt += 1
        started = False
        try:
            async for event in open_stream():
                started = True
                yield event
            return
        except ModelError as error:
            if started or not error.retryable or attempt >= policy.max_attempts:
                if attempt > 1:
                    error.message = f"{error.message} (gave up after {attempt} attempts)"
                    error.args = (error.message,)
                raise
            wait = policy.delay(attempt, error)
            logger.info(  # also a RetryNotice in the stream (a ``model_retry`` event)
                "model request failed (attempt %d of %d, %s), retrying in %.1f s",
                attempt,
                policy.max_attempts,
                error.message,
                wait,
            )
            yield RetryNotice(attempt, policy.max_attempts, wait, error.message, error.status_code)
            await asyncio.sleep(wait)
