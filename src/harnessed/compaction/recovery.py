"""Overflow recovery: what the loop raises when a forced compaction did not save the request.

When the provider rejects a request as too long, the agent loop prepares the same step again
with ``force_compaction=True`` (the compactor keeps only the last message group plus a summary)
and sends it once more. If that is impossible or the provider rejects it again, the error below
surfaces: still a :class:`ContextOverflowError`, saying that recovery was attempted.
"""

from __future__ import annotations

from harnessed.models.errors import ContextOverflowError

__all__ = ["overflow_not_recovered"]


def overflow_not_recovered(
    error: ContextOverflowError, *, shrunk: bool, summary_error: str | None = None
) -> ContextOverflowError:
    """The error for a failed recovery; ``shrunk`` says whether the forced compaction changed
    the history (and the request was retried) or could not make it any smaller, and
    ``summary_error`` names the failure of the summary that recovery needed, if it failed."""
    if summary_error is not None and not shrunk:
        what = (
            "overflow recovery was attempted, but the summary it needed failed "
            f"({summary_error}), so the history could not be made smaller and the request "
            "was not retried"
        )
    elif shrunk:
        what = (
            "the request was still too large for the model after a forced compaction and one "
            "retry (overflow recovery was attempted)"
        )
    else:
        what = (
            "overflow recovery was attempted, but a forced compaction could not make the "
            "history any smaller (the last message group alone is too large), so the request "
            "was not retried"
        )
    return ContextOverflowError(
        f"{what}; provider said: {error.message}",
        status_code=error.status_code,
        provider=error.provider,
    )
