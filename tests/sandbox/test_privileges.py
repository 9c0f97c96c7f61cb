"""A sandboxed command must never leave the host a file that runs with privileges.

Run as root (CI does, and so does a container agent): sandbox uid 1000 used to be host root and
``/workspace`` the host's own directory, so ``cp /bin/sh x; chmod u+s x`` left a setuid-root
shell for any local user. Here every way of making such a file is tried through ``execute``;
afterwards no file in the workspace may carry a setuid/setgid bit, and nothing the command made
may belong to host root. Also: ``/tmp`` is bounded by the memory limit, and a command writing
past the workspace quota is stopped and told why.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import threading
from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.sandbox import BubblewrapSandbox, SandboxLimits
from harnessed.sandbox.guard import Area, WorkspaceGuard
from tests.sandbox.conftest import require_bwrap
from tests.sandbox.helpers import execute, run
from tests.support.fixtures import tool_step

BOB = RuntimeContext("bob", "s1")


@pytest.fixture
def bwrap() -> BubblewrapSandbox:
    return require_bwrap(BubblewrapSandbox())


# each command leaves the file named beside it
MAKERS = {
    "suid-sh": "cp /bin/sh suid-sh && chmod u+s suid-sh",
    "sgid-sh": "cp /bin/sh sgid-sh && chmod g+s sgid-sh",
    "both-sh": "cp /bin/sh both-sh && chmod 6755 both-sh",
    "installed-sh": "install -m 4755 /bin/sh installed-sh",
    "installed-sgid": "install -m 2755 /bin/sh installed-sgid",
    "deep/er/sh": "mkdir -p deep/er && cp /bin/sh deep/er/sh && chmod u+s deep/er/sh",
    "opened-sh": "python3 -c \"import os; fd = os.open('opened-sh', os.O_CREAT | os.O_WRONLY, "
    "0o4755); os.write(fd, open('/bin/sh', 'rb').read()); os.fchmod(fd, 0o4755)\"",
    "copied-from-tmp": "cp /bin/sh /tmp/sh && chmod u+s /tmp/sh && cp -p /tmp/sh copied-from-tmp",
    "untar/t": "cp /bin/sh /tmp/t && chmod 4755 /tmp/t && tar -C /tmp -cf /tmp/a.tar t && "
    "mkdir -p untar && tar -C untar -xpf /tmp/a.tar",
    "agents/bot/users/bob/memory/sh": "cp /bin/sh agents/bot/users/bob/memory/sh && "
    "chmod u+s agents/bot/users/bob/memory/sh",
}


_SETNS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for fd in range(3, 64):
    try:
        link = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    if link.startswith("user:"):
        print("setns", libc.setns(fd, 0), ctypes.get_errno())
print("checked")
"""


def _special_files(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        mode = path.lstat().st_mode
        if stat.S_ISREG(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
            found.append(str(path.relative_to(root)))
    return found


async def test_no_setuid_or_setgid_file_survives_on_the_host(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    makers = list(MAKERS.values())
    results = await run(root, bwrap, BOB, [execute(f"{m} && echo made") for m in makers])
    for maker, text in zip(makers, results, strict=True):
        assert "made" in text, (maker, text)  # the command ran and set the bit inside
    for name in MAKERS:
        assert (root / name).is_file(), name
    assert _special_files(root) == []
    # the bit was refused or removed: the model hears which files lost it
    assert any("setuid/setgid bits" in text for text in results)


# a v2 capability set (cap_setuid, effective) written by "root" of a nested user namespace:
# the kernel stores it as a namespaced capability of that root
_SETCAP = """
import os, struct
os.setxattr("cap-id", "security.capability", struct.pack("<5I", 0x02000001, 1 << 7, 0, 0, 0))
print("set", len(os.getxattr("cap-id", "security.capability")))
"""


async def test_file_capabilities_do_not_survive_on_the_host(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    [text] = await run(
        root,
        bwrap,
        BOB,
        [execute(f"cp /bin/id cap-id && unshare -Ur python3 -c {shlex.quote(_SETCAP)}")],
    )
    assert "set 20" in text, text  # the command did give the file a capability
    with pytest.raises(OSError):
        os.getxattr(root / "cap-id", "security.capability")
    assert "removed from cap-id" in text


@pytest.mark.skipif(os.geteuid() != 0, reason="the agent runs as root in this test")
async def test_files_a_root_agents_command_makes_are_not_owned_by_root(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    [text, owner] = await run(
        root,
        bwrap,
        BOB,
        [
            execute("echo x > made.txt; mkdir -p dir/sub; cp /bin/sh dir/sub/sh; id -u; id -g"),
            execute("stat -c '%u:%g' made.txt; touch /workspace/agents/x 2>&1; echo done"),
        ],
    )
    assert "1000\n1000" in text
    for path in (root / "made.txt", root / "dir", root / "dir" / "sub" / "sh"):
        info = path.lstat()
        assert info.st_uid != 0 and info.st_gid != 0, path
        assert info.st_uid == bwrap.host_user == bwrap.host_id
    assert "1000:1000" in owner  # inside, the sandbox user owns what it made


@pytest.mark.skipif(os.geteuid() != 0, reason="the agent runs as root in this test")
async def test_the_command_is_not_root_on_the_host_and_cannot_become_it(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "host-file.txt").write_text("written by root\n")
    probes = [
        "cat /proc/self/uid_map /proc/self/gid_map",
        "grep -E '^(Uid|Gid|CapEff|CapPrm|NoNewPrivs)' /proc/self/status",
        "grep ' /workspace ' /proc/self/mountinfo",
        # a setuid copy inside does not work: nosuid mounts, no_new_privs
        "cp /bin/id ./id-suid && chmod u+s ./id-suid && ./id-suid -u",
        "unshare -Ur sh -c 'id -u; echo x > /workspace/ns-root.txt'",
        # the one descriptor bwrap leaves open (the user namespace) leads nowhere
        f"python3 -c {shlex.quote(_SETNS)}",
    ]
    results = await run(root, bwrap, BOB, [execute(p) for p in probes])
    uid_map = results[0].split()
    assert uid_map[:6] == ["0", "0", "1", "1000", str(bwrap.host_id), "1"]
    assert "CapEff:\t0000000000000000" in results[1] and "NoNewPrivs:\t1" in results[1]
    assert "Uid:\t1000\t1000\t1000\t1000" in results[1]
    assert "nosuid" in results[2] and "nodev" in results[2]
    assert "1000" in results[3].splitlines()[0]  # still uid 1000: the bit gave nothing
    assert (root / "ns-root.txt").stat().st_uid == bwrap.host_id  # "root" of a nested userns
    lines = results[5].splitlines()
    assert "checked" in lines, results[5]
    assert all(line.startswith("setns -1 ") for line in lines[: lines.index("checked")])
    # the file tools (root on the host) still read and change what commands made, and a
    # command can change what they wrote
    [_, after] = await run(
        root,
        bwrap,
        BOB,
        [
            tool_step("write_file", path="tool.txt", content="from the tool\n"),
            execute("echo more >> tool.txt && echo more >> host-file.txt && cat tool.txt"),
        ],
    )
    assert "more" in after
    assert (root / "host-file.txt").read_text() == "written by root\nmore\n"


async def test_tmp_is_bounded_by_the_memory_limit(tmp_path: Path) -> None:
    limits = SandboxLimits(memory_bytes=64 << 20)
    sandbox = require_bwrap(BubblewrapSandbox(limits=limits))
    [tmp, var, shm] = await run(
        tmp_path / "ws",
        sandbox,
        BOB,
        [
            execute("head -c 140M /dev/zero > /tmp/big; echo status $?; du -m /tmp/big"),
            execute("head -c 140M /dev/zero > /var/tmp/big; echo status $?; du -m /var/tmp/big"),
            execute("head -c 140M /dev/zero > /dev/shm/big; echo status $?; du -m /dev/shm/big"),
        ],
    )
    for text in (tmp, var, shm):
        assert "No space left on device" in text and "status 1" in text, text
        written = int(text.split("status 1")[1].split()[0])
        assert written <= 64, text


def test_tmp_bytes_must_fit_the_memory_limit() -> None:
    with pytest.raises(ValueError, match="tmp_bytes"):
        SandboxLimits(memory_bytes=64 << 20, tmp_bytes=128 << 20)
    with pytest.raises(ValueError, match="workspace_quota_bytes"):
        SandboxLimits(workspace_quota_bytes=0)
    assert SandboxLimits(memory_bytes=64 << 20).tmp_size == 32 << 20


async def test_a_command_writing_past_the_workspace_quota_is_stopped(tmp_path: Path) -> None:
    limits = SandboxLimits(workspace_quota_bytes=16 << 20, file_size_bytes=1 << 30)
    sandbox = require_bwrap(BubblewrapSandbox(limits=limits))
    root = tmp_path / "ws"
    results = await run(
        root,
        sandbox,
        BOB,
        [
            # one growing file, written slowly enough to be watched
            execute(
                "for i in $(seq 200); do head -c 1M /dev/zero >> grow.bin; sleep 0.05; done; "
                "echo finished",
                timeout=120,
            ),
            # many small files at once, faster than the watch: reported afterwards
            execute(
                "stat -c 'grown to %s' grow.bin; "
                "for i in $(seq 40); do head -c 1M /dev/zero > f$i.bin; done; echo wrote"
            ),
            execute("rm -f grow.bin f*.bin; echo cleaned"),
            execute("head -c 8M /dev/zero > fits.bin && echo fits"),
        ],
    )
    stopped, reported, cleaned, fits = results
    assert "finished" not in stopped
    assert "stopped by the sandbox" in stopped and "16.0 MiB" in stopped, stopped
    assert int(reported.split("grown to ")[1].split()[0]) < 200 << 20
    assert "more than the 16.0 MiB one command may write" in reported, reported
    assert "cleaned" in cleaned
    assert "fits" in fits and "more than" not in fits


@pytest.mark.skipif(os.geteuid() != 0, reason="handing files to another user needs root")
def test_the_guard_never_follows_a_directory_swapped_for_a_symlink(tmp_path: Path) -> None:
    # another sandbox shares the workspace root and may swap a directory for a link to a host
    # folder while the guard hands entries to the sandbox user or strips bits
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("root's\n")
    victim.chmod(0o4755)
    root = tmp_path / "ws"
    for d in range(20):
        (root / f"d{d}").mkdir(parents=True)
        (root / f"d{d}" / "f").write_text("x")
        (root / f"l{d}").symlink_to(outside)
    guard = WorkspaceGuard(root, [Area("")], owner=65532, quota=1 << 30)
    stop = threading.Event()

    def swap() -> None:  # each dN is a directory, then a link to outside, then back
        while not stop.is_set():
            for d in range(20):
                with contextlib.suppress(OSError):
                    os.rename(root / f"d{d}", root / f"r{d}")
                    os.rename(root / f"l{d}", root / f"d{d}")
                    os.rename(root / f"d{d}", root / f"l{d}")
                    os.rename(root / f"r{d}", root / f"d{d}")

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        for _ in range(300):
            guard._known.clear()  # read every directory each time
            guard.before()
            guard.after()
    finally:
        stop.set()
        swapper.join()
    info = victim.stat()
    assert (info.st_uid, info.st_gid) == (0, 0)
    assert info.st_mode & 0o4000  # never stripped either: it is not in the workspace
    assert outside.stat().st_uid == 0
