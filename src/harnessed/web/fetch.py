"""Fetching one page for the model: limits, redirects, readable text, pages of lines."""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpcore
import httpx

from harnessed.web.config import WebFetchConfig
from harnessed.web.guard import BlockedAddressError, GuardedBackend

__all__ = ["FetchedPage", "WebFetcher", "WebFetchError", "to_text"]

_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml")
_CHARSET = re.compile(r"charset=([\w.-]+)", re.IGNORECASE)


class WebFetchError(Exception):
    """A page that could not be fetched (the message is for the model)."""


@dataclass(frozen=True, slots=True)
class FetchedPage:
    url: str
    """Where the page was read from, after redirects."""
    status: int
    content_type: str
    lines: tuple[str, ...]
    cut: bool
    """The response was longer than ``max_bytes``."""


def to_text(body: str, content_type: str, url: str) -> str:
    """Readable text of a response: HTML as markdown (trafilatura: the main content, links
    kept; the whole page's text when no main content is found), other text as it is."""
    if "html" not in content_type:
        return body
    try:
        import trafilatura
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "web_fetch needs trafilatura for HTML: pip install 'harnessed[web]'"
        ) from exc
    text = trafilatura.extract(
        body, url=url, output_format="markdown", include_links=True, favor_recall=True
    )
    if not text:
        text = trafilatura.html2txt(body)
    return str(text or "")


class WebFetcher:
    """Fetches pages under one :class:`WebFetchConfig` (one HTTP client, opened lazily)."""

    def __init__(self, config: WebFetchConfig) -> None:
        self.config = config
        self._client: httpx.AsyncClient | None = None
        self._pages: OrderedDict[str, FetchedPage] = OrderedDict()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            transport = httpx.AsyncHTTPTransport(trust_env=False)
            # every connection (each redirect's too) goes through the guarded backend
            transport._pool = httpcore.AsyncConnectionPool(
                ssl_context=httpx.create_ssl_context(),
                network_backend=GuardedBackend(self.config.network),
                max_connections=10,
            )
            self._client = httpx.AsyncClient(
                transport=transport,
                follow_redirects=True,
                max_redirects=self.config.max_redirects,
                trust_env=False,
                headers={"User-Agent": self.config.user_agent},
            )
        return self._client

    async def page(self, url: str) -> FetchedPage:
        cached = self._pages.get(url)
        if cached is not None:
            self._pages.move_to_end(url)
            return cached
        fetched = await self._fetch(url)
        self._pages[url] = fetched
        while len(self._pages) > self.config.cached_pages:
            self._pages.popitem(last=False)
        return fetched

    async def _fetch(self, url: str) -> FetchedPage:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebFetchError(f"web_fetch reads http(s) URLs only, not {url!r}")
        try:
            async with asyncio.timeout(self.config.timeout):
                return await self._read(url)
        except TimeoutError:
            raise WebFetchError(
                f"{url} did not answer within {self.config.timeout:g} seconds"
            ) from None
        except httpx.TooManyRedirects:
            raise WebFetchError(
                f"{url} redirected more than {self.config.max_redirects} times"
            ) from None
        except BlockedAddressError as exc:
            raise WebFetchError(f"refused: {exc}") from None
        except httpx.HTTPError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, BlockedAddressError):
                raise WebFetchError(f"refused: {cause}") from None
            raise WebFetchError(f"could not fetch {url}: {type(exc).__name__}: {exc}") from None

    async def _read(self, url: str) -> FetchedPage:
        limit = self.config.max_bytes
        async with self._http().stream("GET", url) as response:
            content_type = response.headers.get("content-type", "").lower()
            if content_type and not content_type.startswith(_TEXT_TYPES):
                raise WebFetchError(
                    f"{response.url} is {content_type.split(';')[0]}, not a text or HTML page"
                )
            chunks: list[bytes] = []
            size, cut = 0, False
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    cut = True
                    break
            raw = b"".join(chunks)[:limit]
            status, final = response.status_code, str(response.url)
        found = _CHARSET.search(content_type)
        body = raw.decode(found.group(1) if found else "utf-8", errors="replace")
        text = await asyncio.to_thread(to_text, body, content_type or "text/html", final)
        return FetchedPage(final, status, content_type, tuple(text.splitlines()), cut)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def render_page(page: FetchedPage, offset: int, limit: int) -> str:
    """Lines ``offset``..``offset+limit-1`` of a page, numbered, with how to read on."""
    total = len(page.lines)
    head = f"{page.url} (HTTP {page.status}"
    head += ", cut at the size limit)" if page.cut else ")"
    if total == 0:
        return f"{head}: no readable text."
    if offset > total:
        return f"{head} has {total} line(s); nothing at offset {offset}."
    last = min(total, offset + limit - 1)
    rows = [f"{n:>5}\t{page.lines[n - 1]}" for n in range(offset, last + 1)]
    tail = f"[lines {offset}-{last} of {total}"
    tail += f"; continue with offset={last + 1}]" if last < total else "]"
    return "\n".join([f"{head}:", *rows, tail])
