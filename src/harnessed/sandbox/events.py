"""The sandbox lifecycle as custom events (BEHAVIOUR.md §10, §15).

Two events, emitted through the call's ``emit`` (so each is also a ``custom`` record of the
session log), shown by ``harnessed run`` and made spans by
:class:`~harnessed.tracing.Tracing`:

* ``sandbox_acquire`` (:class:`SandboxAcquire`): the first ``execute`` of a call got the
  session's sandbox — ``mode`` is ``live`` (this process still held it), ``restore`` (started
  and filled from the session's snapshot) or ``cold`` (started empty, or a sandbox that mounts
  the workspace itself);
* ``sandbox_snapshot`` (:class:`SandboxSnapshot`): at the end of a call that ran commands, the
  sandbox's ``/workspace`` was archived to the workspace storage — or that failed
  (``status="failed"`` with the error; the call itself is not failed by it). This one comes
  after the call's :class:`~harnessed.AgentEndEvent`: capabilities see it (``on_event``) and
  the session log keeps it, but the event stream has already ended.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

__all__ = [
    "SANDBOX_ACQUIRE",
    "SANDBOX_SNAPSHOT",
    "AcquireMode",
    "SandboxAcquire",
    "SandboxSnapshot",
    "backend_name",
]

SANDBOX_ACQUIRE = "sandbox_acquire"
SANDBOX_SNAPSHOT = "sandbox_snapshot"

AcquireMode = Literal["live", "restore", "cold"]


class SandboxAcquire(TypedDict):
    """Data of a ``sandbox_acquire`` event."""

    mode: AcquireMode
    backend: str
    duration_ms: float


class SandboxSnapshot(TypedDict):
    """Data of a ``sandbox_snapshot`` event."""

    status: Literal["completed", "failed"]
    backend: str
    duration_ms: float
    bytes: NotRequired[int]
    path: NotRequired[str]
    error_type: NotRequired[str]
    error: NotRequired[str]


def backend_name(sandbox: object) -> str:
    """A sandbox's name in events: its class name without ``Sandbox`` (``bubblewrap``)."""
    name = type(sandbox).__name__
    return (name.removesuffix("Sandbox") or name).lower()
