"""A real local HTTP server for provider tests.

The server answers each POST with the next queued :class:`Reply` (status, headers, body or a
list of server-sent-event chunks written one at a time) and records every request it received.
It listens on 127.0.0.1 on a free port and runs in a background thread.

It can be as rude as real servers are: cut a stream mid-body (``Reply.cut``), or answer with
``Connection: keep-alive`` and then reset the connection when the client sends its next request
on it (``Reply.drop_next``), as llama-cpp-python's server does after an empty streamed answer.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One canned HTTP response."""

    status: int = 200
    body: bytes | str | dict[str, Any] = b""
    sse: list[str] | None = None
    """When set, the body is sent as ``text/event-stream``, one chunk per write."""
    headers: dict[str, str] = field(default_factory=dict)
    pause: float = 0.0
    """Seconds to wait before the last SSE chunk (a model that is slow to finish)."""
    cut: bool = False
    """Reset the connection after the last SSE chunk instead of ending the body (a stream
    that is cut: no terminating chunk, no ``[DONE]``)."""
    drop_next: bool = False
    """Say ``Connection: keep-alive``, then reset the connection as soon as the client sends
    its next request on it (that request is read, counted in ``LocalServer.dropped``, and
    never answered)."""


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _is_model_request(request: Recorded) -> bool:
    return request.method == "POST" and request.path != "/api/show"


class LocalServer:
    """A queue of replies served over real HTTP on loopback."""

    def __init__(
        self,
        *,
        keep_alive: bool = True,
        handler: Callable[[Recorded], Reply | None] | None = None,
    ) -> None:
        self.handler = handler
        """Answers a request itself when it returns a reply (else the queue answers)."""
        self.keep_alive = keep_alive
        """Keep connections open after each reply, as real servers do (streams are sent with
        chunked transfer encoding); ``False`` closes the connection after every stream."""
        self.connections = 0
        """How many TCP connections the server accepted."""
        self.dropped: list[Recorded] = []
        """Requests read on a connection a ``drop_next`` reply doomed, then reset unanswered."""
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.unrouted: list[Recorded] = []
        """Requests answered 404 because no handler or queue serves their route."""
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            doomed = False
            """A ``drop_next`` reply was sent on this connection."""

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server.connections += 1

            def _reset(self) -> None:
                """Close the connection with a TCP reset, as a crashing server does."""
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True

            def do_POST(self) -> None:
                self._serve()

            def do_GET(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorded = Recorded(self.command, self.path, dict(self.headers.items()), body)
                if self.doomed:
                    with server._lock:
                        server.dropped.append(recorded)
                    self._reset()
                    return
                with server._lock:
                    reply = server.handler(recorded) if server.handler is not None else None
                    if reply is None and not _is_model_request(recorded):
                        # Like a real chat server: routes it does not have are not found
                        # (window discovery probes /v1/models, /props, /api/show).
                        server.unrouted.append(recorded)
                        reply = Reply(404, {"error": {"message": f"no route {self.path}"}})
                    else:
                        server.requests.append(recorded)
                    reply = reply or (
                        server.replies.pop(0)
                        if server.replies
                        else Reply(500, {"error": {"message": "no reply queued in test server"}})
                    )
                if reply.drop_next:
                    self.doomed = True
                if reply.sse is not None:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    if reply.drop_next:
                        self.send_header("Connection", "keep-alive")
                    if server.keep_alive or reply.drop_next:
                        self.send_header("Transfer-Encoding", "chunked")
                    else:
                        self.send_header("Connection", "close")
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    for number, chunk in enumerate(reply.sse):
                        if reply.pause and number == len(reply.sse) - 1:
                            time.sleep(reply.pause)
                        data = chunk.encode()
                        if (server.keep_alive or reply.drop_next) and data:
                            data = b"%x\r\n%s\r\n" % (len(data), data)
                        self.wfile.write(data)
                        self.wfile.flush()
                    if reply.cut:
                        self._reset()
                    elif server.keep_alive or reply.drop_next:
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                    else:
                        self.close_connection = True
                    return
                payload = reply.body
                if isinstance(payload, dict):
                    payload = json.dumps(payload).encode()
                elif isinstance(payload, str):
                    payload = payload.encode()
                self.send_response(reply.status)
                headers = dict(reply.headers)
                self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                if reply.drop_next:
                    self.send_header("Connection", "keep-alive")
                elif not server.keep_alive:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def serve() -> Iterator[LocalServer]:
    """Generator for a pytest fixture: ``server = pytest.fixture(serve)``."""
    srv = LocalServer().start()
    try:
        yield srv
    finally:
        srv.stop()
