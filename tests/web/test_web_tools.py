"""web_fetch and web_search against local servers: readable text in pages, the private
address refusal (default, after a redirect, after a DNS answer), size and time limits,
permission rules, and a local stand-in for Tavily's API."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harnessed import HarnessAgent, PermissionRule, RuntimeContext, ToolResultEvent
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.web import NetworkPolicy, TavilySearch, Web, WebFetchConfig
from harnessed.web.guard import BlockedAddressError
from tests.support.http_server import LocalServer, Reply

ARTICLE = """<html><head><title>Release notes</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Version 2.0</h1>
<p>The database migration tool now rolls back on failure. {filler}</p>
<p>See <a href="https://example.org/docs">the docs</a> for details.</p>
<script>var tracking = "should not be read";</script>
</article></body></html>""".format(filler="It keeps a journal of every step. " * 20)

LOOPBACK = NetworkPolicy(allowed_networks=("127.0.0.0/8",))


class Site:
    """A local web site: an article, redirects, a huge page and one that never answers."""

    def __init__(self) -> None:
        self.release = threading.Event()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def send(self, status: int, body: bytes, kind: str = "text/html") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/article":
                    self.send(200, ARTICLE.encode())
                elif self.path == "/plain":
                    self.send(
                        200, "\n".join(f"line {n}" for n in range(1, 501)).encode(), "text/plain"
                    )
                elif self.path.startswith("/to/"):
                    self.send_response(302)
                    self.send_header("Location", "http://" + self.path[len("/to/") :])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path == "/huge":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(50 * 100_000))
                    self.end_headers()
                    try:
                        for _ in range(50):
                            self.wfile.write(b"x" * 99_999 + b"\n")
                    except OSError:
                        pass  # the client stopped reading: the point of the test
                elif self.path == "/slow":
                    site.release.wait(60)  # never answers while the test runs
                elif self.path == "/image":
                    self.send(200, b"\x89PNG....", "image/png")
                else:
                    self.send(404, b"not here", "text/plain")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    running = Site()
    yield running
    running.close()


def call(name: str, /, **arguments: object) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, arguments)])


async def run(web: Web, *calls: ScriptedResponse, **kw: Any) -> list[tuple[bool, str]]:
    model = ScriptedModel([*calls, "done"])
    agent = HarnessAgent("web", model, capabilities=[web], max_iters=len(calls) + 1, **kw)
    try:
        events = [e async for e in agent.stream_events("go", RuntimeContext("u", "s"))]
    finally:
        await agent.close()
    return [(e.result.is_error, e.result.content) for e in events if isinstance(e, ToolResultEvent)]


async def test_html_becomes_readable_text_paged_like_read_file(site: Site) -> None:
    web = Web(WebFetchConfig(network=LOOPBACK))
    (ok, page), (_, plain), (_, rest) = await run(
        web,
        call("web_fetch", url=site.url("/article")),
        call("web_fetch", url=site.url("/plain"), limit=100),
        call("web_fetch", url=site.url("/plain"), offset=101, limit=100),
    )
    assert not ok
    assert "Version 2.0" in page and "rolls back on failure" in page
    assert "https://example.org/docs" in page  # links kept
    assert "tracking" not in page and "About" not in page  # no script, no navigation
    assert "    1\tline 1" in plain and "continue with offset=101" in plain
    assert "  101\tline 101" in rest and "lines 101-200 of 500" in rest


async def test_loopback_is_refused_by_default_also_through_dns(site: Site) -> None:
    results = await run(
        Web(),
        call("web_fetch", url=site.url("/article")),
        call("web_fetch", url=f"http://localhost:{site.port}/article"),  # a DNS answer
        call("web_fetch", url=f"http://[::ffff:127.0.0.1]:{site.port}/article"),
    )
    for is_error, text in results:
        assert is_error and "refused" in text, text


async def test_a_redirect_to_a_private_address_is_refused(site: Site) -> None:
    web = Web(WebFetchConfig(network=LOOPBACK))  # the site itself may be reached
    results = await run(
        web,
        call("web_fetch", url=site.url("/to/169.254.169.254/latest/meta-data/")),
        call("web_fetch", url=site.url("/to/10.0.0.7/admin")),
        call("web_fetch", url=site.url(f"/to/127.0.0.1:{site.port}/article")),  # allowed
    )
    assert results[0][0] and "169.254.169.254" in results[0][1] and "refused" in results[0][1]
    assert results[1][0] and "10.0.0.7" in results[1][1]
    assert not results[2][0] and "Version 2.0" in results[2][1]


async def test_a_huge_page_is_cut_and_a_slow_one_times_out(site: Site) -> None:
    web = Web(WebFetchConfig(network=LOOPBACK, max_bytes=300_000, timeout=0.5))
    (huge_error, huge), (slow_error, slow), (image_error, image) = await run(
        web,
        call("web_fetch", url=site.url("/huge"), limit=2_000),
        call("web_fetch", url=site.url("/slow")),
        call("web_fetch", url=site.url("/image")),
    )
    assert not huge_error and "cut at the size limit" in huge
    assert 290_000 < huge.count("x") <= 300_000  # what was read: the limit, not the 5 MB
    assert slow_error and "did not answer within 0.5 seconds" in slow
    assert image_error and "image/png" in image


async def test_permission_rules_apply_to_urls(site: Site) -> None:
    web = Web(WebFetchConfig(network=LOOPBACK))
    ((denied, text),) = await run(
        web,
        call("web_fetch", url=site.url("/article")),
        permission_rules=[PermissionRule.deny("web_fetch", url="http://127.0.0.1*")],
    )
    assert denied and "Version" not in text


def test_the_policy_names_what_it_refuses() -> None:
    policy = NetworkPolicy()
    for address in (
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "::1",
        "fe80::1",
        "100.64.0.1",
        "0.0.0.0",
        "fc00::1",
    ):
        assert not policy.allows(address), address
    assert policy.allows("93.184.215.14")
    with pytest.raises(BlockedAddressError, match=r"10\.1\.2\.3"):
        policy.check("intranet.example", ["93.184.215.14", "10.1.2.3"])  # any private answer
    with pytest.raises(ValueError, match="allowed_networks"):
        NetworkPolicy(allowed_networks=("not a network",))


async def test_web_search_through_tavilys_sdk_against_a_local_stand_in() -> None:
    server = LocalServer().start()
    try:
        server.queue(
            Reply(
                body={
                    "query": "harnessed cjk search",
                    "results": [
                        {
                            "title": "Search docs",
                            "url": "https://example.org/search",
                            "content": "CJK runs are indexed as pairs.",
                            "score": 0.9,
                        },
                        {"title": "Garbage"},  # no url: ignored
                    ],
                }
            )
        )
        web = Web(search=TavilySearch("tvly-test-key", base_url=server.url))
        ((is_error, text),) = await run(web, call("web_search", query="harnessed cjk search"))
        assert not is_error
        assert "Search docs" in text and "https://example.org/search" in text
        assert "Garbage" not in text
        sent = server.requests[0]
        assert sent.path == "/search" and sent.json()["query"] == "harnessed cjk search"
        assert "tvly-test-key" in sent.headers.get("Authorization", "")
        server.queue(Reply(status=500, body={"detail": "boom"}))
        ((failed, why),) = await run(web, call("web_search", query="again"))
        assert failed and "web search failed" in why
    finally:
        server.stop()


async def test_web_search_is_off_unless_a_provider_is_given() -> None:
    model = ScriptedModel(["ok"])
    agent = HarnessAgent("web", model, capabilities=[Web()])
    await agent.call("hi")
    await agent.close()
    names = {t.name for t in model.requests[0].tools}
    assert "web_fetch" in names and "web_search" not in names
