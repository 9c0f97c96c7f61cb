"""The web: ``web_fetch(url)`` and, with a search provider, ``web_search(query)``.

* :mod:`.policy`, :mod:`.guard` — which addresses may be reached: loopback, private,
  link-local and other non-public networks are refused by default, checked on every
  connection (each redirect, every address a name resolves to), so neither a redirect nor a
  DNS answer reaches them;
* :mod:`.config`, :mod:`.fetch` — fetching a page within size and time limits and turning
  HTML into readable text (trafilatura, the ``web`` extra), paged like ``read_file``;
* :mod:`.search` — the :class:`SearchProvider` protocol and :class:`TavilySearch` (Tavily's
  SDK, the ``tavily`` extra);
* :mod:`.capability` — :class:`Web`, the capability that offers the tools.
"""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessed.web.capability import Web
    from harnessed.web.config import WebFetchConfig
    from harnessed.web.policy import BlockedAddressError, NetworkPolicy
    from harnessed.web.search import SearchProvider, SearchResult, TavilySearch

__all__ = [
    "BlockedAddressError",
    "NetworkPolicy",
    "SearchProvider",
    "SearchResult",
    "TavilySearch",
    "Web",
    "WebFetchConfig",
]

_LAZY = {
    "BlockedAddressError": "harnessed.web.policy",
    "NetworkPolicy": "harnessed.web.policy",
    "SearchProvider": "harnessed.web.search",
    "SearchResult": "harnessed.web.search",
    "TavilySearch": "harnessed.web.search",
    "Web": "harnessed.web.capability",
    "WebFetchConfig": "harnessed.web.config",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
