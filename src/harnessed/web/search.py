"""``web_search`` providers: a small protocol and Tavily's SDK behind it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["SearchProvider", "SearchResult", "TavilySearch", "render_results"]


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    snippet: str


@runtime_checkable
class SearchProvider(Protocol):
    """Answers a web search. Implement it to put any search API behind ``web_search``."""

    async def search(self, query: str, max_results: int) -> Sequence[SearchResult]:
        """At most ``max_results`` results for ``query``, best first."""
        ...


class TavilySearch:
    """:class:`SearchProvider` on Tavily's official SDK (``pip install 'harnessed[tavily]'``).

    Args:
        api_key: The key (default: the ``TAVILY_API_KEY`` environment variable).
        base_url: Another API address (a proxy, or a local stand-in in tests).
        search_depth: Tavily's ``basic`` (default) or ``advanced``.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        search_depth: str = "basic",
    ) -> None:
        key = api_key or os.environ.get("TAVILY_API_KEY")
        if not key:
            raise ValueError("TavilySearch needs an api_key (or TAVILY_API_KEY in the environment)")
        if search_depth not in ("basic", "advanced"):
            raise ValueError(
                f"TavilySearch search_depth must be basic or advanced: {search_depth!r}"
            )
        try:
            from tavily import AsyncTavilyClient
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise ImportError(
                "TavilySearch needs tavily-python: pip install 'harnessed[tavily]'"
            ) from exc
        self._client: Any = AsyncTavilyClient(api_key=key, api_base_url=base_url)
        self.search_depth = search_depth

    def __repr__(self) -> str:
        return f"TavilySearch(search_depth={self.search_depth!r})"  # never the key

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        answer = await self._client.search(
            query, search_depth=self.search_depth, max_results=max_results
        )
        found = answer.get("results") if isinstance(answer, dict) else None
        results: list[SearchResult] = []
        for item in found if isinstance(found, list) else []:
            if isinstance(item, dict) and isinstance(item.get("url"), str):
                results.append(
                    SearchResult(
                        str(item.get("title") or item["url"]),
                        item["url"],
                        str(item.get("content") or ""),
                    )
                )
        return results[:max_results]


def render_results(query: str, results: Sequence[SearchResult]) -> str:
    if not results:
        return f"No web results for {query!r}."
    lines = [f"{len(results)} web result(s) for {query!r}:"]
    for n, r in enumerate(results, 1):
        snippet = " ".join(r.snippet.split())
        if len(snippet) > 400:
            snippet = snippet[:399] + "…"
        lines.append(f"{n}. {r.title}\n   {r.url}\n   {snippet}")
    lines.append("Read a page with web_fetch(url).")
    return "\n".join(lines)
