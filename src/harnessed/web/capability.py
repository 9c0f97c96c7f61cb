"""``Web``: the capability that offers ``web_fetch`` and (with a provider) ``web_search``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harnessed.capabilities.base import Capability
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.decorator import tool
from harnessed.web.config import WebFetchConfig
from harnessed.web.search import SearchProvider, render_results

if TYPE_CHECKING:
    from harnessed.web.fetch import WebFetcher

__all__ = ["Web"]

_MAX_LIMIT = 2_000


class Web(Capability):
    """Web tools for the model.

    Args:
        fetch: How ``web_fetch`` fetches (limits, the networks it may reach); ``None`` = no
            ``web_fetch``.
        search: A :class:`~harnessed.web.SearchProvider` (e.g.
            :class:`~harnessed.web.TavilySearch`); ``None`` (the default) = no ``web_search``.
    """

    name = "web"

    def __init__(
        self, fetch: WebFetchConfig | None = None, *, search: SearchProvider | None = None
    ) -> None:
        if search is not None and not isinstance(search, SearchProvider):
            raise TypeError(f"Web search must be a SearchProvider, got {type(search).__name__}")
        self.fetch_config = fetch if fetch is not None else WebFetchConfig()
        self._fetcher: WebFetcher | None = None
        self.search_provider = search

    @property
    def fetcher(self) -> WebFetcher:
        """The fetcher (made, with its HTTP client library, at the first fetch)."""
        if self._fetcher is None:
            from harnessed.web.fetch import WebFetcher

            self._fetcher = WebFetcher(self.fetch_config)
        return self._fetcher

    def tools(self) -> Sequence[Tool]:
        found = [self._fetch_tool()]
        if self.search_provider is not None:
            found.append(self._search_tool(self.search_provider))
        return found

    def _fetch_tool(self) -> Tool:
        default_limit = self.fetch_config.page_lines

        @tool(name="web_fetch", read_only=True, concurrency_safe=True)
        async def web_fetch(url: str, offset: int = 1, limit: int = default_limit) -> str:
            """Fetch a web page (http or https) as readable text in numbered lines.

            Args:
                offset: First line (1-based); read on with the offset shown.
            """
            from harnessed.web.fetch import WebFetchError, render_page

            if offset < 1 or not 1 <= limit <= _MAX_LIMIT:
                raise ToolError(f"offset must be 1 or more and limit 1 to {_MAX_LIMIT}")
            try:
                page = await self.fetcher.page(url.strip())
            except WebFetchError as exc:
                raise ToolError(str(exc)) from None
            return render_page(page, offset, limit)

        return web_fetch

    def _search_tool(self, provider: SearchProvider) -> Tool:
        @tool(name="web_search", read_only=True, concurrency_safe=True)
        async def web_search(query: str, max_results: int = 5) -> str:
            """Search the web; returns titles, addresses and snippets.

            Args:
                query: What to look for.
                max_results: 1 to 10.
            """
            if not query.strip():
                raise ToolError("query must not be blank")
            if not 1 <= max_results <= 10:
                raise ToolError("max_results must be 1 to 10")
            try:
                results = await provider.search(query.strip(), max_results)
            except Exception as exc:
                raise ToolError(f"the web search failed: {type(exc).__name__}: {exc}") from None
            return render_results(query, results)

        return web_search

    async def close(self) -> None:
        if self._fetcher is not None:
            await self._fetcher.close()
