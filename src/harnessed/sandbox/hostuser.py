"""Who a sandboxed command is on the host when the agent runs as root.

Run by root, bubblewrap maps the sandbox's user to host root: every file a command makes is
owned by root, and a ``chmod u+s`` on a copied shell leaves a setuid-root program in the
workspace for any local user to run. So a root agent gives its commands an unprivileged host
identity instead (``HOST_ID``, uid and gid 65532 unless chosen otherwise, the ``nonroot`` user
of distroless images):

* once per process, a *user namespace* is made whose map holds two ids only: ``0 → 0`` (files
  of root keep showing as root) and ``1000 → HOST_ID`` (the sandbox user);
* ``bwrap --userns`` joins it as root to set up the mounts (root may still read the workspace
  however deep it lies), then every capability is dropped except ``CAP_SETUID``/``CAP_SETGID``,
  and ``setpriv`` switches to uid and gid 1000 (all capabilities gone, ``no_new_privs`` set by
  bwrap) right before the command runs (``env -C`` then enters ``/workspace``).

A command therefore writes as host ``HOST_ID``, never as root: what it creates is owned by that
id, and a setuid bit it sets can give away no more than that id (the workspace guard removes
those bits too, :mod:`harnessed.sandbox.guard`). Root's files are no longer writable to it, so
the guard hands the writable part of the workspace to ``HOST_ID`` before each command.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess

__all__ = [
    "DEFAULT_HOST_ID",
    "SANDBOX_ID",
    "HostUserError",
    "setpriv_prefix",
    "user_namespace",
]

DEFAULT_HOST_ID = 65532
"""The host uid and gid of a root agent's commands (distroless ``nonroot``)."""
SANDBOX_ID = 1000
"""The uid and gid of commands inside the sandbox."""


class HostUserError(Exception):
    """No user namespace for unprivileged commands could be made (the message says why)."""


@functools.cache
def user_namespace(host_id: int) -> int:
    """A descriptor of the user namespace mapping ``SANDBOX_ID`` to ``host_id`` (cached: one
    per process and id; the descriptor keeps the namespace alive)."""
    if os.geteuid() != 0:
        raise HostUserError("only root can map the sandbox user to another host user")
    program = shutil.which("unshare")
    if program is None:
        raise HostUserError("'unshare' (util-linux) is not installed")
    try:
        helper = subprocess.Popen(
            [program, "--user", "/bin/sh", "-c", "echo ready; read done"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
    except OSError as exc:
        raise HostUserError(f"cannot start unshare: {exc}") from exc
    assert helper.stdin is not None and helper.stdout is not None and helper.stderr is not None
    try:
        if helper.stdout.readline() != b"ready\n":  # the namespace exists once the shell runs
            detail = helper.stderr.read().decode("utf-8", "replace").strip()
            raise HostUserError(f"unshare --user failed: {detail or 'no namespace'}")
        proc = f"/proc/{helper.pid}"
        mapping = f"0 0 1\n{SANDBOX_ID} {host_id} 1\n"
        try:
            for name in ("uid_map", "gid_map"):
                with open(f"{proc}/{name}", "w") as file:
                    file.write(mapping)
            return os.open(f"{proc}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise HostUserError(f"cannot map the sandbox user to uid {host_id}: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            helper.stdin.close()
        try:
            helper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()
        helper.stdout.close()
        helper.stderr.close()


def setpriv_prefix(setpriv: str, env: str, cwd: str) -> list[str]:
    """What becomes the sandbox user inside the sandbox, enters ``cwd``, then runs the command
    (bwrap cannot enter a directory of the sandbox user itself: it is still root, without
    capabilities, when it would)."""
    return [
        setpriv,
        f"--reuid={SANDBOX_ID}",
        f"--regid={SANDBOX_ID}",
        "--clear-groups",
        "--inh-caps=-all",
        "--",
        env,
        "-C",
        cwd,
    ]
