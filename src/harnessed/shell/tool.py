"""The sandboxed ``execute`` tool, and how the agent decides whether to offer it.

``execute_tool(manager, config)`` runs each command in the calling session's sandbox (acquired
on first use in a call, released by the agent at the end of the call). The text the model sees
is the same as before: the output (first and last halves of 100,000 bytes), notes, and the exit
status. :func:`resolve_sandbox` picks the default backend: bubblewrap when it works here;
without a usable sandbox there is no ``execute`` and the reason is logged once.
"""

from __future__ import annotations

import logging

from harnessed.sandbox.base import Sandbox, SandboxError
from harnessed.sandbox.bubblewrap import BubblewrapSandbox
from harnessed.sandbox.events import SANDBOX_ACQUIRE, SandboxAcquire
from harnessed.sandbox.manager import AcquireReport, SandboxManager
from harnessed.sandbox.process import ShellConfig, format_result
from harnessed.sandbox.unisolated import HostSandbox
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool

__all__ = ["execute_tool", "resolve_sandbox"]

logger = logging.getLogger(__name__)
_logged: set[str] = set()

_DOC = """Run a shell command (``/bin/sh -c``) in {where}.

{isolation}Output (stdout and stderr) is capped at {max_output} bytes, keeping the start and \
the end, and ends with the exit code. At the timeout the command is killed with every process \
it started{background}. Stdin is closed; send large output to a file and read it with read_file.

Args:
    command: e.g. ``pytest -q tests``.
    timeout: Seconds, at most {max_timeout}.
"""


def resolve_sandbox(sandbox: Sandbox | None, *, required: bool) -> Sandbox | None:
    """The backend ``execute`` will use, or ``None`` (logged once) when there is none.

    ``sandbox=None`` means the default (bubblewrap). With ``required`` an unusable sandbox is
    an error instead.
    """
    chosen = sandbox if sandbox is not None else BubblewrapSandbox()
    reason = chosen.unavailable_reason()
    if reason is None:
        return chosen
    message = (
        f"the execute tool is not offered: no usable sandbox ({reason}). Install bubblewrap, "
        "pass another sandbox (RemoteSandbox), or choose HostSandbox() explicitly to run "
        "commands unisolated"
    )
    if required:
        raise SandboxError(message)
    if message not in _logged:
        _logged.add(message)
        logger.warning(message)
    return None


def _acquire_reporter(ctx: ToolContext) -> AcquireReport | None:
    """Emits ``sandbox_acquire`` for the first ``execute`` of a call only."""
    call = ctx.call
    if call is not None and call.values.get(SANDBOX_ACQUIRE):
        return None

    def report(data: SandboxAcquire) -> None:
        if call is not None:
            call.values[SANDBOX_ACQUIRE] = True
        ctx.emit(SANDBOX_ACQUIRE, data)

    return report


def execute_tool(manager: SandboxManager, config: ShellConfig | None = None) -> Tool:
    """``execute`` bound to ``manager``'s sandboxes."""
    settings = config or ShellConfig()
    isolated = manager.sandbox.isolated
    if settings.env or settings.inherit_env:
        if not isinstance(manager.sandbox, HostSandbox):
            raise ValueError(
                "ShellConfig env/inherit_env apply to HostSandbox only; give a sandbox its "
                "variables with its own env= argument (an isolated sandbox never sees the "
                "agent's environment)"
            )
        manager.sandbox.env.update(settings.env)
        manager.sandbox.inherit_env = manager.sandbox.inherit_env or settings.inherit_env

    async def execute(
        ctx: ToolContext, command: str, timeout: float = settings.default_timeout
    ) -> str:
        if not command.strip():
            raise ToolError("command is empty")
        if not timeout > 0:
            raise ToolError(f"timeout must be a positive number of seconds, got {timeout}")
        effective = min(float(timeout), settings.max_timeout)
        session = ctx.runtime.session_id or ctx.agent_name
        try:
            lease = await manager.acquire(
                ctx.runtime.user_id, session, report=_acquire_reporter(ctx)
            )
            mounts = await manager.mounts(ctx.runtime) if manager.mounts is not None else ()
            result, notes = await lease.execute(
                command, effective, max_output_bytes=settings.max_output_bytes, mounts=mounts
            )
        except SandboxError as exc:
            raise ToolError(f"the sandbox failed: {exc}") from exc
        text = format_result(result, timeout=effective, config=settings)
        for note in result.notes:
            text += f"\n[{note}]"
        if notes:
            text += "\n[not saved to the workspace: " + "; ".join(notes) + "]"
        if effective < timeout:
            text += f"\n[timeout lowered from {timeout:g} s to the maximum of {effective:g} s]"
        return text

    if isolated:
        where = "a sandbox whose working directory /workspace holds your workspace files"
        network = getattr(manager.sandbox, "network", None)
        isolation = ("No network. " if network == "none" else "") + (
            "Files outside /workspace are not kept. "
        )
        background = " (background processes end with the command)"
    else:
        where, isolation, background = "the workspace directory", "", ""
    execute.__doc__ = _DOC.format(
        where=where,
        isolation=isolation,
        background=background,
        max_output=f"{settings.max_output_bytes:,}",
        max_timeout=f"{settings.max_timeout:g}",
    )
    return tool(concurrency_safe=False)(execute)
