"""USD prices of model requests from the maintained ``genai-prices`` table.

The table (a snapshot shipped with the package, never fetched at run time) knows the input,
cached-input, cache-write and output prices of most hosted models. A model it does not know,
or a request whose usage was not reported, has no price: ``None``, never 0.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache
from typing import Protocol

from harnessed.models.base import Usage

__all__ = ["GenaiPrices", "PriceTable", "default_prices"]

logger = logging.getLogger(__name__)


class PriceTable(Protocol):
    """Prices a request: USD for ``usage`` of ``model`` (served by ``provider`` when known),
    ``None`` when the price is unknown."""

    def price(self, model: str, usage: Usage | None, provider: str | None = None) -> float | None:
        """USD for one request, or ``None`` when unknown."""
        ...


class GenaiPrices:
    """:class:`PriceTable` backed by the ``genai-prices`` package."""

    def price(self, model: str, usage: Usage | None, provider: str | None = None) -> float | None:
        if usage is None or not model:
            return None
        calc = _calculator(model, provider)
        if calc is None:
            return None
        try:
            return calc(usage)
        except Exception:  # a malformed table entry must not fail the run
            logger.debug("could not price a request of %s", model, exc_info=True)
            return None


_PROVIDERS = {"openai": "openai", "anthropic": "anthropic"}
"""Our adapters' provider names and the table's provider ids."""


@lru_cache(maxsize=256)
def _calculator(model: str, provider: str | None) -> Callable[[Usage], float] | None:
    """A function pricing usage of ``model``, or ``None`` when the table does not know it.

    The lookup (model-name matching over the whole table) is done once per model."""
    import genai_prices

    provider_id = _PROVIDERS.get(provider or "")
    try:
        genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model, provider_id=provider_id)
    except LookupError:
        if provider_id is None:
            return None
        try:  # an OpenAI-compatible server serving another family's model
            genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model)
        except LookupError:
            return None
        provider_id = None

    def calc(usage: Usage) -> float:
        read, write = usage.cache_read_tokens, usage.cache_write_tokens
        priced = genai_prices.Usage(
            input_tokens=max(usage.input_tokens, read + write),
            cache_read_tokens=read or None,
            cache_write_tokens=write or None,
            output_tokens=usage.output_tokens,
        )
        result = genai_prices.calc_price(priced, model, provider_id=provider_id)
        return float(result.total_price)

    return calc


_DEFAULT = GenaiPrices()


def default_prices() -> PriceTable:
    """The shared default :class:`PriceTable`."""
    return _DEFAULT
