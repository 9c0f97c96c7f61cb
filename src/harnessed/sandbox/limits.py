"""Resource limits of a sandboxed command: rlimits, and a pids cgroup where one can be made.

``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NOFILE`` and ``RLIMIT_CORE`` are set
by a small shell prefix just before ``bwrap`` starts and hold for every process of the
command. The number of
processes is a *pids cgroup* when this process may create one (cgroup v2 with the pids
controller delegated, or a writable v1 pids hierarchy — the usual case for root in a
container), else ``RLIMIT_NPROC``, which Linux counts per host user: commands running at the
same time share it (``BubblewrapSandbox.process_limit`` says which one holds).

Two limits are not rlimits: the sandbox's ``/tmp`` is a tmpfs of ``tmp_bytes`` (its pages are
memory no ``RLIMIT_AS`` sees, so it is kept inside ``memory_bytes``), and
``workspace_quota_bytes`` bounds how much one command may write to ``/workspace``
(:mod:`harnessed.sandbox.guard` watches it).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PidsCgroup", "SandboxLimits", "find_pids_hierarchy"]

_V2 = Path("/sys/fs/cgroup")
_V1 = Path("/sys/fs/cgroup/pids")


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Per-command resource limits; invalid values fail at construction."""

    cpu_seconds: int = 600
    """CPU time of each process (``RLIMIT_CPU``)."""
    memory_bytes: int = 4 << 30
    """Address space of each process (``RLIMIT_AS``)."""
    max_processes: int = 512
    """Processes and threads of the whole command (pids cgroup, else ``RLIMIT_NPROC``)."""
    file_size_bytes: int = 4 << 30
    """Largest file a process may write (``RLIMIT_FSIZE``)."""
    open_files: int = 4096
    """Open file descriptors per process (``RLIMIT_NOFILE``)."""
    tmp_bytes: int | None = None
    """Size of the sandbox's ``/tmp`` (also ``/var/tmp``); at most ``memory_bytes``, by default
    half of it."""
    workspace_quota_bytes: int = 1 << 30
    """How much one command may write to ``/workspace`` (the size of the files it creates or
    changes); a command that goes past it is stopped."""

    def __post_init__(self) -> None:
        for name in (
            "cpu_seconds",
            "memory_bytes",
            "max_processes",
            "file_size_bytes",
            "workspace_quota_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SandboxLimits.{name} must be a positive integer, got {value!r}")
        if isinstance(self.open_files, bool) or not isinstance(self.open_files, int):
            raise ValueError(
                f"SandboxLimits.open_files must be an integer, got {self.open_files!r}"
            )
        if self.open_files < 16:
            raise ValueError("SandboxLimits.open_files must be at least 16")
        tmp = self.tmp_bytes
        if tmp is not None:
            if isinstance(tmp, bool) or not isinstance(tmp, int) or tmp < 1 << 20:
                raise ValueError(f"SandboxLimits.tmp_bytes must be at least 1 MiB, got {tmp!r}")
            if tmp > self.memory_bytes:
                raise ValueError(
                    f"SandboxLimits.tmp_bytes ({tmp}) must not exceed memory_bytes "
                    f"({self.memory_bytes}): /tmp is memory"
                )

    @property
    def tmp_size(self) -> int:
        """The size of ``/tmp`` in bytes (``tmp_bytes``, or half of ``memory_bytes``)."""
        if self.tmp_bytes is not None:
            return self.tmp_bytes
        return max(1 << 20, self.memory_bytes // 2)

    def launcher(self, cgroup: PidsCgroup | None) -> list[str]:
        """A ``/bin/sh`` prefix that joins the cgroup, sets the rlimits and execs the rest.

        Without a cgroup ``RLIMIT_NPROC`` holds: commands never run as host root, which the
        kernel would exempt (bwrap's own processes may be root: they are exempt, harmlessly).

        Done by a shell rather than a ``preexec_fn`` so Python can start the child with
        ``vfork`` (forking a large agent process costs tens of milliseconds).
        """
        steps = []
        if cgroup is not None:
            steps.append(f"echo $$ > {shlex.quote(str(cgroup.procs_file))}")
        steps += [
            f"ulimit -S -t {self.cpu_seconds}",
            f"ulimit -H -t {self.cpu_seconds + 1}",  # SIGXCPU first, SIGKILL a second later
            f"ulimit -v {self.memory_bytes // 1024}",
            f"ulimit -f {max(1, self.file_size_bytes // 512)}",  # dash counts 512-byte blocks
            f"ulimit -n {self.open_files}",
            "ulimit -c 0",
        ]
        if cgroup is None:
            steps.append(f"ulimit -p {self.max_processes}")
        script = " && ".join(steps) + ' && unset PWD OLDPWD && exec "$@"'
        return ["/bin/sh", "-c", script, "harnessed-sandbox"]


def find_pids_hierarchy() -> Path | None:
    """A cgroup directory under which this process can make pids-limited groups, or ``None``."""
    candidates: list[Path] = []
    controllers = _V2 / "cgroup.controllers"
    if controllers.exists() and "pids" in controllers.read_text().split():
        own = _own_v2_group()
        if own is not None:
            candidates.append(own)
    if _V1.is_dir():
        candidates.append(_V1)
    for base in candidates:
        probe = base / f"harnessed-probe-{secrets.token_hex(4)}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if (probe / "pids.max").exists():
                return base
        finally:
            with contextlib.suppress(OSError):
                probe.rmdir()
    return None


def _own_v2_group() -> Path | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return _V2 / line[3:].lstrip("/")
    return None


class PidsCgroup:
    """One command's cgroup: at most ``limit`` tasks; everything in it killed on :meth:`close`."""

    def __init__(self, base: Path, limit: int) -> None:
        self.path = base / f"harnessed-{secrets.token_hex(8)}"
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(limit))
        self.procs_file = self.path / "cgroup.procs"

    def kill_all(self) -> None:
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
                return
        for _ in range(100):
            try:
                pids = [int(p) for p in self.procs_file.read_text().split()]
            except OSError:
                return
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        """Kill what is left, then remove the group (in the background when the kernel has not
        reaped the killed tasks yet: waiting for that would add milliseconds to every command)."""
        self.kill_all()
        try:
            self.path.rmdir()
        except OSError:
            threading.Thread(target=self._remove, name="harnessed-cgroup", daemon=True).start()

    def _remove(self) -> None:
        for _ in range(2_000):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                self.kill_all()
                time.sleep(0.005)
