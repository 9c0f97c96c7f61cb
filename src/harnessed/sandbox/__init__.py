"""Sandboxes for ``execute`` (BEHAVIOUR.md §10).

* :class:`BubblewrapSandbox` — the default on Linux: namespaces, read-only system, the model's
  view of the workspace at ``/workspace``, no network, resource limits.
* :class:`RemoteSandbox` — a runtime reached over HTTP (``harnessed sandbox-server`` in any
  container image).
* :class:`HostSandbox` — commands on the host, **unisolated**; only when chosen explicitly.

:class:`SandboxManager` runs the lifecycle (acquire per call, restore from snapshot, keep the
sandbox and the workspace in step, snapshot at call end); :func:`execute_tool` is the tool.
The lifecycle is visible as ``sandbox_acquire`` / ``sandbox_snapshot`` events
(:mod:`harnessed.sandbox.events`).
"""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports
from harnessed.sandbox.base import (
    ExecResult,
    Sandbox,
    SandboxEntry,
    SandboxError,
    SandboxSession,
    SandboxSpec,
    SandboxUnavailableError,
)

if TYPE_CHECKING:
    from harnessed.sandbox.base import (
        ExecResult,
        Sandbox,
        SandboxEntry,
        SandboxError,
        SandboxSession,
        SandboxSpec,
        SandboxUnavailableError,
    )
    from harnessed.sandbox.bubblewrap import BubblewrapSandbox, Network
    from harnessed.sandbox.events import (
        SANDBOX_ACQUIRE,
        SANDBOX_SNAPSHOT,
        SandboxAcquire,
        SandboxSnapshot,
    )
    from harnessed.sandbox.limits import SandboxLimits
    from harnessed.sandbox.manager import SandboxLease, SandboxManager
    from harnessed.sandbox.remote import RemoteSandbox
    from harnessed.sandbox.unisolated import HostSandbox
    from harnessed.shell.tool import execute_tool, resolve_sandbox

__all__ = [
    "SANDBOX_ACQUIRE",
    "SANDBOX_SNAPSHOT",
    "BubblewrapSandbox",
    "ExecResult",
    "HostSandbox",
    "Network",
    "RemoteSandbox",
    "Sandbox",
    "SandboxAcquire",
    "SandboxEntry",
    "SandboxError",
    "SandboxLease",
    "SandboxLimits",
    "SandboxManager",
    "SandboxSession",
    "SandboxSnapshot",
    "SandboxSpec",
    "SandboxUnavailableError",
    "execute_tool",
    "resolve_sandbox",
]

_LAZY = {
    "BubblewrapSandbox": "harnessed.sandbox.bubblewrap",
    "HostSandbox": "harnessed.sandbox.unisolated",
    "Network": "harnessed.sandbox.bubblewrap",
    "RemoteSandbox": "harnessed.sandbox.remote",
    "SANDBOX_ACQUIRE": "harnessed.sandbox.events",
    "SANDBOX_SNAPSHOT": "harnessed.sandbox.events",
    "SandboxAcquire": "harnessed.sandbox.events",
    "SandboxLease": "harnessed.sandbox.manager",
    "SandboxLimits": "harnessed.sandbox.limits",
    "SandboxManager": "harnessed.sandbox.manager",
    "SandboxSnapshot": "harnessed.sandbox.events",
    "execute_tool": "harnessed.shell.tool",
    "resolve_sandbox": "harnessed.shell.tool",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
