"""Cost: prompt caching, prices and usage limits (see ``docs/cost.md``).

* :mod:`.caching` — the per-session key sent as OpenAI's ``prompt_cache_key`` (the cache
  breakpoints themselves are placed by the adapters, from ``ModelRequest.cache_points``);
* :mod:`.prices` — USD per request from the ``genai-prices`` table (``None`` when unknown);
* :mod:`.limits` — :class:`UsageLimits` and the :class:`LimitReached` that ends a call;
* :mod:`.meter` — a call's :class:`UsageMeter`: its totals, its session's, its parent's;
* :mod:`.ledger` — a session's spending, added up from the ``run/end`` records of its log.
"""

from harnessed.cost.caching import cache_key
from harnessed.cost.limits import LimitReached, UsageLimits
from harnessed.cost.meter import UsageMeter
from harnessed.cost.prices import GenaiPrices, PriceTable, default_prices
from harnessed.models.usage import UsageTotals

__all__ = [
    "GenaiPrices",
    "LimitReached",
    "PriceTable",
    "UsageLimits",
    "UsageMeter",
    "UsageTotals",
    "cache_key",
    "default_prices",
]
