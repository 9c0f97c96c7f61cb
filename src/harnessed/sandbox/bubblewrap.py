"""``BubblewrapSandbox``: each command in fresh Linux namespaces made by ``bwrap``.

What a command sees (and does not):

* new user, pid, ipc, uts, cgroup and network namespaces; it runs as uid 1000 ``sandbox``
  with no capabilities, in a new session (no terminal to inject keystrokes into);
* on the host it is never root: a root agent's commands run as an unprivileged host user
  (:mod:`harnessed.sandbox.hostuser`, uid 65532 by default), a non-root agent's as the agent's
  user; every mount is ``nosuid,nodev``, and setuid/setgid bits are removed from the
  workspace after each command (:mod:`harnessed.sandbox.guard`);
* the system directories (``/usr``, ``/bin``, ``/lib`` ...) and a few harmless files of
  ``/etc`` read-only; its own ``/proc`` (only its processes), a minimal ``/dev``, an empty
  ``/tmp`` (``/var/tmp`` is the same) and ``/dev/shm`` whose sizes come out of the memory
  limit; no home directory, no other host file, no ``/etc/shadow``;
* the model's view of the workspace at ``/workspace``, read-write: for a local workspace the
  directory itself with the hidden areas (``.harnessed/``, ``agents/`` ...) covered by empty
  read-only mounts, the caller's own scope mounted back, and the instruction files mounted
  read-only; for other workspaces a directory of its own kept in step by the manager;
* an environment of its own (``PATH``, ``HOME=/workspace``, ``LANG``): nothing of the agent
  process, whose environment and ``/proc`` entry are out of reach;
* no network unless ``network="host"``;
* resource limits (:class:`~harnessed.sandbox.limits.SandboxLimits`), a write quota on
  ``/workspace``, and when the command ends or times out every process it started is killed
  with the namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import posixpath
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from harnessed.sandbox.base import (
    ExecResult,
    SandboxError,
    SandboxSpec,
    SandboxUnavailableError,
)
from harnessed.sandbox.guard import Area, WorkspaceGuard
from harnessed.sandbox.hostuser import (
    DEFAULT_HOST_ID,
    SANDBOX_ID,
    HostUserError,
    setpriv_prefix,
    user_namespace,
)
from harnessed.sandbox.limits import PidsCgroup, SandboxLimits, find_pids_hierarchy
from harnessed.sandbox.localdir import DirectorySession
from harnessed.sandbox.process import ShellConfig, run_command
from harnessed.workspace import LocalFilesystem, WorkspaceError
from harnessed.workspace.paths import encode_part
from harnessed.workspace.view import INSTRUCTION_PATHS, ViewPolicy, runtime_link_check

__all__ = ["BubblewrapSandbox", "Network"]

Network = Literal["none", "host"]

SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "protocols",
    "services",
    "ssl",
    "timezone",
)
_ETC_NETWORK = ("gai.conf", "hosts", "resolv.conf")
_PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    "sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
_GROUP = "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"
_HOSTS = "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n"


class BubblewrapSandbox:
    """Run ``execute`` in a bubblewrap sandbox (Linux; needs ``bwrap`` and user namespaces).

    Args:
        network: ``"none"`` (default: only a loopback device) or ``"host"``.
        limits: CPU time, memory, processes, file size and open files per command.
        env: Extra environment variables for commands.
        read_only_paths: More host paths to show read-only at the same place (a toolchain in
            ``/opt`` ...). Nothing else of the host is visible.
        state_dir: Where sandboxes with their own storage keep their directories (default: a
            private directory under the system temp dir).
        bwrap: The ``bwrap`` program.
        host_id: The host uid and gid commands run as when the agent is root (default 65532;
            never 0). A non-root agent's commands run as the agent's own user.
    """

    isolated = True
    supports_mounts = True

    def __init__(
        self,
        *,
        network: Network = "none",
        limits: SandboxLimits | None = None,
        env: Mapping[str, str] | None = None,
        read_only_paths: Sequence[str] = (),
        state_dir: str | os.PathLike[str] | None = None,
        bwrap: str = "bwrap",
        host_id: int = DEFAULT_HOST_ID,
    ) -> None:
        if isinstance(host_id, bool) or not isinstance(host_id, int) or not 0 < host_id < 2**32 - 1:
            raise ValueError(
                f"BubblewrapSandbox host_id must be a uid between 1 and 4294967294, got {host_id!r}"
            )
        if network not in ("none", "host"):
            raise ValueError(f"BubblewrapSandbox network must be 'none' or 'host', got {network!r}")
        for path in read_only_paths:
            if not isinstance(path, str) or not path.startswith("/") or path.rstrip("/") == "":
                raise ValueError(
                    f"BubblewrapSandbox read_only_paths entry {path!r} must be an "
                    "absolute path other than /"
                )
        self.network: Network = network
        self.limits = limits or SandboxLimits()
        self.env = dict(env or {})
        self.read_only_paths = tuple(read_only_paths)
        self.bwrap = bwrap
        self.host_id = host_id
        self._userns: int | None = None
        self._setpriv: tuple[str, str] | None = None
        self._state_dir = Path(state_dir) if state_dir is not None else None
        self._reason: str | None = None
        self._probed = False
        self._cgroups: Path | None = None
        self._etc_dir: Path | None = None

    def __repr__(self) -> str:
        return f"BubblewrapSandbox(network={self.network!r})"

    # ------------------------------------------------------------ availability
    def unavailable_reason(self) -> str | None:
        if not self._probed:
            program = shutil.which(self.bwrap)
            if program is not None:
                self.bwrap = program
            host_id = self.host_id if os.geteuid() == 0 else None
            self._reason, self._cgroups = _probe(self.bwrap, program is not None, host_id)
            if self._reason is None and host_id is not None:
                self._userns = user_namespace(host_id)  # made (and cached) by the probe
                self._setpriv = _tools()
            self._probed = True
        return self._reason

    @property
    def host_user(self) -> int:
        """The host uid (and gid) commands run as: ``host_id`` for a root agent, else the
        agent's own."""
        return self.host_id if os.geteuid() == 0 else os.geteuid()

    @property
    def process_limit(self) -> str:
        """How the process limit is enforced: ``"cgroup"`` or ``"rlimit"`` (``RLIMIT_NPROC``
        of the host user, shared by the commands running at the same time)."""
        self.unavailable_reason()
        return "cgroup" if self._cgroups is not None else "rlimit"

    # ------------------------------------------------------------ sessions
    async def start(self, spec: SandboxSpec) -> BubblewrapSession:
        reason = self.unavailable_reason()
        if reason is not None:
            raise SandboxUnavailableError(reason)
        if spec.local_root is not None:
            return BubblewrapSession(self, Path(spec.local_root), spec.policy, bound=True)
        directory = self._session_dir(spec.key)
        await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
        return BubblewrapSession(self, directory, spec.policy, bound=False)

    def _session_dir(self, key: tuple[str, str, str]) -> Path:
        if self._state_dir is None:
            base = Path(tempfile.gettempdir()) / f"harnessed-sandboxes-{os.geteuid()}"
            base.mkdir(mode=0o700, exist_ok=True)
            self._state_dir = base
        parts = [encode_part(k, n) for k, n in zip(key, ("agent", "user", "session"), strict=True)]
        return self._state_dir.joinpath(*parts)

    async def aclose(self) -> None:
        if self._etc_dir is not None:
            shutil.rmtree(self._etc_dir, ignore_errors=True)
            self._etc_dir = None

    # ------------------------------------------------------------ the command line
    def _etc(self) -> Path:
        """A private ``/etc``: the harmless host files copied once, plus its own passwd, group
        and hosts (one mount per command instead of one per file)."""
        if self._etc_dir is None:
            etc = Path(tempfile.mkdtemp(prefix="harnessed-etc-"))
            names = _ETC + (_ETC_NETWORK if self.network == "host" else ())
            for name in names:
                source = Path("/etc", name)
                with contextlib.suppress(OSError):
                    if source.is_dir() and not source.is_symlink():
                        shutil.copytree(source, etc / name, symlinks=True)
                    elif source.exists():
                        shutil.copy2(source, etc / name, follow_symlinks=True)
            own = {"passwd": _PASSWD, "group": _GROUP}
            if self.network != "host":
                own["hosts"] = _HOSTS
            for name, text in own.items():
                (etc / name).write_text(text)
            etc.chmod(0o755)
            self._etc_dir = etc
        return self._etc_dir

    def system_args(self) -> list[str]:
        """Namespaces, identity, environment and the read-only system."""
        if self._userns is not None:  # a root agent: see harnessed.sandbox.hostuser
            args = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
            if self.network != "host":
                args.append("--unshare-net")
            args += [
                "--userns", str(self._userns), "--uid", "0", "--gid", "0",
                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
            ]  # fmt: skip
        else:
            args = ["--unshare-all"]
            if self.network == "host":
                args.append("--share-net")
            args += ["--uid", str(SANDBOX_ID), "--gid", str(SANDBOX_ID), "--cap-drop", "ALL"]
        args += ["--die-with-parent", "--new-session", "--hostname", "sandbox", "--clearenv"]
        env = {"PATH": SANDBOX_PATH, "HOME": "/workspace", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
               "USER": "sandbox", **self.env}  # fmt: skip
        for key, value in env.items():
            args += ["--setenv", key, value]
        for path in _SYSTEM_DIRS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += ["--ro-bind", str(self._etc()), "/etc"]
        shm = max(1 << 20, self.limits.tmp_size // 8)
        tmp = max(1 << 20, self.limits.tmp_size - shm)
        args += [
            "--proc", "/proc", "--dev", "/dev",
            "--perms", "1777", "--size", str(shm), "--tmpfs", "/dev/shm",
            "--perms", "1777", "--size", str(tmp), "--tmpfs", "/tmp",
            "--perms", "0755", "--dir", "/var", "--symlink", "../tmp", "/var/tmp",
        ]  # fmt: skip
        made = set(_MADE)
        for path in self.read_only_paths:  # after the tmpfs mounts, which would hide them
            args += [*_way_to(path, made), "--ro-bind-try", path, path]
        return args

    def command_args(self, command: str) -> list[str]:
        """What bwrap runs: the command in ``/workspace``, by way of ``setpriv`` for a root
        agent."""
        if self._setpriv is None or self._userns is None:
            return ["--chdir", "/workspace", "/bin/sh", "-c", command]
        # bwrap 0.8 leaves the user namespace's descriptor open in the command: harmless (a
        # process cannot setns() into its own user namespace, nor into an ancestor from a
        # nested one), and dash cannot close a descriptor above 9 to tidy it away
        prefix = setpriv_prefix(*self._setpriv, "/workspace")
        return [*prefix, "/bin/sh", "-c", command]


_MADE = frozenset({"/", "/dev", "/etc", "/proc", "/tmp", "/var", "/workspace", *_SYSTEM_DIRS})


def _way_to(path: str, made: set[str]) -> list[str]:
    """``--dir`` arguments for the directories above ``path`` not made yet (bwrap would make
    them itself, mode 0700: closed to the sandbox user)."""
    args: list[str] = []
    parts = [p for p in path.split("/") if p]
    for depth in range(1, len(parts)):
        way = "/" + "/".join(parts[:depth])
        if way not in made:
            made.add(way)
            args += ["--perms", "0755", "--dir", way]
    return args


def _tools() -> tuple[str, str] | None:
    """``setpriv`` and ``env`` as the sandbox sees them (it shows the same system dirs)."""
    setpriv = shutil.which("setpriv", path=SANDBOX_PATH)
    env = shutil.which("env", path=SANDBOX_PATH)
    return (setpriv, env) if setpriv is not None and env is not None else None


@functools.cache
def _probe(program: str, installed: bool, host_id: int | None) -> tuple[str | None, Path | None]:
    """Why ``program`` cannot sandbox here (``None`` when it can) and the pids cgroup to use;
    probed once per process (agents are built often; the host does not change)."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux (this is {sys.platform})", None
    if not installed:
        return f"{program!r} is not installed (on Debian/Ubuntu: apt-get install bubblewrap)", None
    # every feature a command uses: sized tmpfs mounts (bwrap 0.7+), and for a root agent the
    # unprivileged identity (a prepared user namespace, setpriv inside)
    tmpfs = ["--perms", "1777", "--size", str(1 << 20), "--tmpfs", "/tmp"]
    fds: tuple[int, ...] = ()
    if host_id is None:
        argv = [program, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", *tmpfs]
        argv += ["true"]
    else:
        tools = _tools()
        if tools is None:
            return "'setpriv' (util-linux) and 'env' are needed to run commands unprivileged", None
        try:
            userns = user_namespace(host_id)
        except HostUserError as exc:
            return f"cannot run commands as an unprivileged user: {exc}", None
        fds = (userns,)
        argv = [
            program, "--unshare-pid", "--unshare-net", "--userns", str(userns),
            "--uid", "0", "--gid", "0", "--cap-drop", "ALL",
            "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--die-with-parent",
            "--ro-bind", "/", "/", *tmpfs, *setpriv_prefix(*tools, "/"),
            "/bin/sh", "-c", f'test "$(id -u):$(id -g)" = "{SANDBOX_ID}:{SANDBOX_ID}"',
        ]  # fmt: skip
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=30,
            env={"PATH": SANDBOX_PATH},
            check=False,
            pass_fds=fds,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be started: {exc}", None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        if "--size" in detail or "--perms" in detail:
            return f"bwrap is too old ({detail}): sized /tmp mounts need bubblewrap 0.7+", None
        return f"bwrap cannot create namespaces here ({detail}); user namespaces may be off", None
    return None, find_pids_hierarchy()


class BubblewrapSession(DirectorySession):
    """The sandbox of one session: each :meth:`execute` is one ``bwrap`` run."""

    def __init__(
        self, backend: BubblewrapSandbox, directory: Path, policy: ViewPolicy, *, bound: bool
    ) -> None:
        super().__init__(directory, bound=bound)
        self.backend = backend
        self.policy = policy

    async def execute(
        self,
        command: str,
        timeout: float,
        *,
        max_output_bytes: int = 100_000,
        mounts: Sequence[tuple[str, str]] = (),
    ) -> ExecResult:
        binds = self._workspace_args()  # a few quick syscalls: not worth a thread hop
        made = {*_MADE, *self.backend.read_only_paths}
        for source, target in mounts:
            if not target.startswith("/") or target.rstrip("/") in ("", "/workspace"):
                raise SandboxError(f"cannot mount {source!r} at {target!r}: not a free path")
            binds += [*_way_to(target, made), "--ro-bind", source, target]
        backend = self.backend
        args = [*backend.system_args(), *binds]
        config = ShellConfig(
            max_output_bytes=max_output_bytes,
            default_timeout=timeout,
            max_timeout=timeout,
        )
        limits = backend.limits
        guard = self._guard
        await asyncio.to_thread(guard.before)
        stop = asyncio.Event()
        watcher = asyncio.create_task(guard.watch(stop))
        base = backend._cgroups
        cgroup = PidsCgroup(base, limits.max_processes) if base else None
        # The arguments go through a memfd (--args), so the sandbox's /proc/1/cmdline shows no
        # host paths.
        args_fd = os.memfd_create("bwrap-args", 0)
        fds = (args_fd,) if backend._userns is None else (args_fd, backend._userns)
        try:
            os.write(args_fd, b"".join(a.encode() + b"\0" for a in args))
            os.lseek(args_fd, 0, os.SEEK_SET)
            result = await run_command(
                command,
                cwd=Path("/"),  # no host path in the environment bwrap starts with
                timeout=timeout,
                config=config,
                argv=[
                    *limits.launcher(cgroup),
                    backend.bwrap,
                    "--args",
                    str(args_fd),
                    *backend.command_args(command),
                ],
                env={"PATH": SANDBOX_PATH},  # bwrap's own environment: nothing of the agent's
                pass_fds=fds,
                stop=stop,
            )
        finally:
            watcher.cancel()
            os.close(args_fd)
            if cgroup is not None:
                cgroup.close()
            # even when cancelled: no setuid bit may stay behind
            written, stripped = await asyncio.shield(asyncio.to_thread(guard.after))
        return dataclasses.replace(
            ExecResult.of(result), notes=_notes(guard, written, stripped, limits)
        )

    @functools.cached_property
    def _guard(self) -> WorkspaceGuard:
        """The writable areas of this session's directory (see :mod:`~.guard`)."""
        backend = self.backend
        owner = backend.host_id if backend._userns is not None else None
        quota = backend.limits.workspace_quota_bytes
        if not self._bound:
            return WorkspaceGuard(self.directory, [Area("")], owner=owner, quota=quota)
        policy = self.policy
        read_only = [n for n in INSTRUCTION_PATHS if policy.read_only(n)]
        skip = frozenset(n.casefold() for n in (*policy.hidden_roots, *read_only))
        areas = [Area("", skip), *(Area(own) for own in policy.own)]
        return WorkspaceGuard(self.directory, areas, owner=owner, quota=quota)

    def _workspace_args(self) -> list[str]:
        root = self.directory
        args = ["--bind", str(root), "/workspace"]
        if not self._bound:
            return args
        # links the commands made in the caller's own scope are not followed to find a mount
        fs = LocalFilesystem(root, create=False).with_link_check(
            runtime_link_check(self.policy.hidden_roots)
        )
        try:
            for hidden in self.policy.hidden_roots:
                fs._makedirs(hidden)
                args += ["--perms", "0555", "--tmpfs", f"/workspace/{hidden}"]
            made: set[str] = set()
            for own in self.policy.own:
                if posixpath.basename(own) != "MEMORY.md":
                    fs._makedirs(own)
                elif fs._info(own) is None:
                    continue
                # the way there, inside the empty mount: enterable by the sandbox user
                parts = own.split("/")
                for depth in range(2, len(parts)):
                    way = "/".join(parts[:depth])
                    if way not in made:
                        made.add(way)
                        args += ["--perms", "0555", "--dir", f"/workspace/{way}"]
                args += ["--bind", str(fs.resolve(own)), f"/workspace/{own}"]
            for name in INSTRUCTION_PATHS:
                if name.casefold() not in self.policy.writable_instructions:
                    if fs._info(name) is None:  # a placeholder the sandbox cannot edit
                        if name.endswith(".md"):
                            fs._write(name, b"")
                        elif name.endswith(".json"):
                            fs._write(name, b"{}\n")  # an empty configuration
                        else:
                            fs._makedirs(name)
                    args += ["--ro-bind", str(fs.resolve(name)), f"/workspace/{name}"]
        except (WorkspaceError, OSError) as exc:
            raise SandboxError(
                f"cannot prepare the sandbox's view of the workspace: {exc}"
            ) from exc
        return args


def _notes(
    guard: WorkspaceGuard, written: int | None, stripped: list[str], limits: SandboxLimits
) -> tuple[str, ...]:
    notes = []
    quota = _size(limits.workspace_quota_bytes)
    if guard.exceeded is not None:
        notes.append(
            f"stopped by the sandbox: the command wrote {_size(guard.exceeded)} to /workspace, "
            f"more than the {quota} one command may write; delete what is not needed"
        )
    elif written is not None and written > limits.workspace_quota_bytes:
        notes.append(
            f"the command wrote {_size(written)} to /workspace, more than the {quota} one "
            "command may write; delete what is not needed"
        )
    if stripped:
        shown = ", ".join(stripped[:10]) + (
            f" and {len(stripped) - 10} more" if len(stripped) > 10 else ""
        )
        notes.append(
            "setuid/setgid bits and file capabilities are not allowed in the workspace; removed "
            f"from {shown}"
        )
    return tuple(notes)


def _size(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB" if n >= 1 << 20 else f"{n:,} bytes"
