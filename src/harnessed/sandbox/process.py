"""Running a shell command on the host, bounded in time and output — **not isolated**.

This is the process runner every sandbox uses, and ``shell_tools`` (an ``execute`` bound
directly to a local workspace directory, with no sandbox). A command run here has the agent's
user id and sees what that user sees: other users' data in the workspace, the host's files,
the network, and the agent's own environment through ``/proc``. ``HarnessAgent`` never uses
it directly: its ``execute`` runs in a :mod:`harnessed.sandbox`, and host execution happens only
with an explicit ``HostSandbox()``.

Each command runs as ``/bin/sh -c COMMAND`` in a new session (its own process group), with
the workspace's local directory as the working directory and stdin closed. Standard output
and standard error share one pipe, so they stay interleaved as the command wrote them.

Bounds that keep the agent responsive:

* Output: the first and last halves of ``max_output_bytes`` (100,000) are kept and the middle
  is dropped with a note; output keeps being drained so the command is never blocked on a full
  pipe. A command that pours out more than ``runaway_output_bytes`` is stopped.
* Time: after ``timeout`` seconds the whole process group gets SIGTERM, then SIGKILL after
  ``kill_grace`` seconds; cancelling the tool call does the same. The call returns within
  about ``timeout + kill_grace`` seconds.
* Environment: by default a minimal one (``PATH``, ``HOME`` = the workspace, ``LANG``), so the
  agent's variables are not *passed* to commands (they can still read them from
  ``/proc/<agent pid>/environ``: only a sandbox prevents that); ``inherit_env=True`` passes the
  parent's environment and ``env`` adds or overrides variables.

Processes a command deliberately puts in the background (``server &``) are left running when
the command itself finishes; their later output is no longer captured.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from harnessed.tools.base import Tool, ToolError
from harnessed.tools.decorator import tool
from harnessed.workspace import Workspace

__all__ = ["CommandResult", "ShellConfig", "run_command", "shell_tools"]

_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_DRAIN_SECONDS = 0.5
"""After the shell exits, how long to wait for processes it left holding the output pipe."""


@dataclass(frozen=True, slots=True)
class ShellConfig:
    """Settings of the ``execute`` tool; invalid values fail at construction."""

    env: Mapping[str, str] = field(default_factory=dict)
    """Variables added to (or overriding) the command environment."""
    inherit_env: bool = False
    """Start from this process's environment instead of the minimal one."""
    max_output_bytes: int = 100_000
    """Output kept per command (first half and last half); the rest is dropped with a note."""
    default_timeout: float = 120.0
    """Seconds a command may run when the call gives no timeout."""
    max_timeout: float = 600.0
    """Upper bound on the timeout a call may ask for."""
    kill_grace: float = 1.0
    """Seconds between SIGTERM and SIGKILL when a command is stopped."""
    runaway_output_bytes: int = 64 << 20
    """A command producing more output than this in total is stopped."""
    shell: str = "/bin/sh"

    def __post_init__(self) -> None:
        if self.max_output_bytes < 2:
            raise ValueError("ShellConfig.max_output_bytes must be at least 2")
        if not self.default_timeout > 0:
            raise ValueError("ShellConfig.default_timeout must be positive")
        if not self.max_timeout >= self.default_timeout:
            raise ValueError("ShellConfig.max_timeout must be at least default_timeout")
        if not self.kill_grace > 0:
            raise ValueError("ShellConfig.kill_grace must be positive")
        if self.runaway_output_bytes < self.max_output_bytes:
            raise ValueError("ShellConfig.runaway_output_bytes must be at least max_output_bytes")
        for key, value in self.env.items():
            if not isinstance(key, str) or not key or "=" in key or not isinstance(value, str):
                raise ValueError(f"ShellConfig.env entry {key!r} must map a name to a string")
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))

    def environment(self, home: Path) -> dict[str, str]:
        """The environment a command gets when the workspace directory is ``home``."""
        if self.inherit_env:
            base = dict(os.environ)
        else:
            base = {
                "PATH": os.environ.get("PATH") or _DEFAULT_PATH,
                "HOME": str(home),
                "LANG": "C.UTF-8",
            }
        base.update(self.env)
        return base


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What happened to one command."""

    output: str
    """Captured output (stdout and stderr interleaved), possibly with its middle dropped."""
    exit_code: int | None
    """The exit status; negative when a signal ended the shell, ``None`` if unknown."""
    total_bytes: int
    """All the output the command produced, kept or not."""
    truncated: bool
    timed_out: bool
    runaway: bool
    """Stopped because it produced more than ``runaway_output_bytes``."""
    pipe_left_open: bool
    """Background processes still held the output open when the command finished."""
    pid: int


class _Capture(asyncio.Protocol):
    """Receives the output pipe: keeps a bounded head and tail, counts everything."""

    def __init__(self, max_bytes: int, runaway_bytes: int) -> None:
        self.head_cap = max_bytes // 2
        self.tail_cap = max_bytes - self.head_cap
        self.runaway_bytes = runaway_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.closed = asyncio.Event()
        self.runaway = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]
        if self.total > self.runaway_bytes:
            self.runaway.set()

    def eof_received(self) -> bool | None:
        self.closed.set()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def text(self) -> tuple[str, bool]:
        kept = len(self.head) + min(len(self.tail), self.tail_cap)
        if self.total <= kept:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace"), False
        dropped = self.total - kept
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail[-self.tail_cap :]).decode("utf-8", "replace")
        return f"{head}\n[... {dropped:,} bytes of output omitted ...]\n{tail}", True


async def run_command(
    command: str,
    *,
    cwd: Path,
    timeout: float,
    config: ShellConfig,
    argv: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
    stop: asyncio.Event | None = None,
) -> CommandResult:
    """Run ``command`` with ``/bin/sh -c`` in ``cwd`` under the bounds of ``config``.

    A sandbox passes its own ``argv`` (the program that runs the command, e.g. ``bwrap ...``),
    ``env`` for that program, and a ``preexec_fn`` (resource limits) run in the child. Setting
    ``stop`` kills the command like a timeout does (the caller says why).
    """
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    program = list(argv) if argv is not None else [config.shell, "-c", command]
    try:
        process = await asyncio.create_subprocess_exec(
            *program,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            cwd=cwd,
            env=dict(env) if env is not None else config.environment(cwd),
            start_new_session=True,
            preexec_fn=preexec_fn,
            pass_fds=tuple(pass_fds),
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    capture = _Capture(config.max_output_bytes, config.runaway_output_bytes)
    transport, _ = await loop.connect_read_pipe(
        lambda: capture, os.fdopen(read_fd, "rb", buffering=0)
    )
    exited = asyncio.ensure_future(process.wait())
    runaway = asyncio.ensure_future(capture.runaway.wait())
    waiters = {exited, runaway}
    stopper = asyncio.ensure_future(stop.wait()) if stop is not None else None
    if stopper is not None:
        waiters.add(stopper)
    timed_out = stopped_for_output = pipe_left_open = False
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if exited not in done:
            stopped_for_output = runaway in done
            timed_out = not stopped_for_output and stopper not in done
            await _kill_group(process, config.kill_grace)
        try:
            await asyncio.wait_for(capture.closed.wait(), _DRAIN_SECONDS)
        except TimeoutError:
            pipe_left_open = True
    finally:
        if process.returncode is None:  # cancelled, or an error above: never leave it running
            await asyncio.shield(_kill_group(process, config.kill_grace))
        transport.close()
        for task in waiters:
            task.cancel()
    output, truncated = capture.text()
    return CommandResult(
        output=output,
        exit_code=process.returncode,
        total_bytes=capture.total,
        truncated=truncated,
        timed_out=timed_out,
        runaway=stopped_for_output,
        pipe_left_open=pipe_left_open and not (timed_out or stopped_for_output),
        pid=process.pid,
    )


async def _kill_group(process: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the command's process group, then SIGKILL whatever is left after ``grace``."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(process.wait()), grace)
    # Children may ignore SIGTERM or outlive the shell: the group gets SIGKILL either way.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


class CommandOutcome(Protocol):
    """What :func:`format_result` reads: a :class:`CommandResult` or a sandbox's result."""

    @property
    def output(self) -> str: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def total_bytes(self) -> int: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def runaway(self) -> bool: ...
    @property
    def pipe_left_open(self) -> bool: ...


def format_result(result: CommandOutcome, *, timeout: float, config: ShellConfig) -> str:
    """The text the model sees: the output, then bracketed notes and the exit status."""
    # NUL bytes are shown as the NUL symbol: they break many stores and mean nothing to a model
    output = result.output.replace("\x00", "\u2400")
    parts = [output.rstrip("\n") if output.strip() else "(no output)"]
    if result.truncated:
        parts.append(
            f"[output truncated: {result.total_bytes:,} bytes in total, only the first and "
            f"last {config.max_output_bytes // 2:,} bytes are shown]"
        )
    if result.runaway:
        parts.append(
            f"[stopped: the command produced more than {config.runaway_output_bytes:,} bytes "
            "of output; redirect large output to a file and read it with read_file]"
        )
    if result.timed_out:
        parts.append(
            f"[timed out after {timeout:g} s; the command and its child processes were killed]"
        )
    if result.pipe_left_open:
        parts.append("[background processes kept running; their later output is not captured]")
    if result.timed_out or result.runaway:
        pass  # the note above says how it ended; the signal number adds nothing
    elif result.exit_code is None:
        parts.append("[exit code unknown]")
    elif result.exit_code < 0:
        try:
            name = signal.Signals(-result.exit_code).name
        except ValueError:
            name = f"signal {-result.exit_code}"
        parts.append(f"[killed by {name}]")
    else:
        parts.append(f"[exit code {result.exit_code}]")
    return "\n".join(parts)


_EXECUTE_DOC = """Run a shell command (``/bin/sh -c``) in the workspace directory.

Output (stdout and stderr) is capped at {max_output} bytes, keeping the start and the end, and
ends with the exit code. At the timeout the command is killed with its child processes. Stdin
is closed; send large output to a file and read it with read_file.

Args:
    command: e.g. ``pytest -q tests``.
    timeout: Seconds, at most {max_timeout}.
"""


def shell_tools(
    workspace: Workspace,
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    max_output_bytes: int = 100_000,
    default_timeout: float = 120,
    config: ShellConfig | None = None,
) -> list[Tool]:
    """``[execute]`` bound to the workspace's local directory, on the host, **unisolated**.

    Prefer ``HarnessAgent(..., sandbox=...)``; this exists for applications that run trusted
    commands and choose host execution deliberately.

    Pass either the keyword settings or a full :class:`ShellConfig`. Raises ``ValueError`` when
    the workspace is not on local disk (commands need a real working directory).
    """
    root = workspace.local_root
    if root is None:
        raise ValueError(
            f"the execute tool needs a workspace on local disk; {workspace!r} has no local "
            "directory (pass shell=False for remote or in-memory workspaces)"
        )
    if config is None:
        config = ShellConfig(
            env=dict(env or {}),
            inherit_env=inherit_env,
            max_output_bytes=max_output_bytes,
            default_timeout=float(default_timeout),
            max_timeout=max(600.0, float(default_timeout)),
        )
    settings = config
    cwd = root

    async def execute(command: str, timeout: float = settings.default_timeout) -> str:
        if not command.strip():
            raise ToolError("command is empty")
        if not timeout > 0:
            raise ToolError(f"timeout must be a positive number of seconds, got {timeout}")
        effective = min(float(timeout), settings.max_timeout)
        result = await run_command(command, cwd=cwd, timeout=effective, config=settings)
        text = format_result(result, timeout=effective, config=settings)
        if effective < timeout:
            text += f"\n[timeout lowered from {timeout:g} s to the maximum of {effective:g} s]"
        return text

    execute.__doc__ = _EXECUTE_DOC.format(
        max_output=f"{settings.max_output_bytes:,}",
        max_timeout=f"{settings.max_timeout:g}",
    )
    return [tool(concurrency_safe=False)(execute)]
