"""Who holds (or waits for) a turn lease: ids that name a process, and whether it is gone."""

from __future__ import annotations

import functools
import os
import socket

__all__ = ["holder_id", "holder_is_gone"]


@functools.cache
def _host() -> str:
    """This host and pid namespace (a pid names the same process only inside one)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid").strip("pid:[]")
    except OSError:
        namespace = "0"
    return f"{socket.gethostname()}:{namespace}"


@functools.cache
def _this_process(pid: int) -> str:
    return f"{_host()}:{pid}"


def holder_id() -> str:
    """A lease holder's id: host, pid namespace, process and a random part (unique per
    acquire)."""
    return f"{_this_process(os.getpid())}:{os.urandom(6).hex()}"


def holder_is_gone(holder: object) -> bool:
    """Whether ``holder`` (a :func:`holder_id`) names a process of this host and pid namespace
    that no longer exists: its lease (or its place in a session's line) can be taken at once
    instead of after it expires (a process killed mid-turn does not block its sessions).
    Anything else — another host or namespace, a live or unknown process, an id of another
    form — counts as alive."""
    if not isinstance(holder, str):
        return False
    parts = holder.split(":")
    if len(parts) != 4 or f"{parts[0]}:{parts[1]}" != _host():
        return False
    try:
        pid = int(parts[2])
    except ValueError:
        return False
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's process) or cannot be asked
    return False
