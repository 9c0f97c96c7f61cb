"""The memory flush before a summary: in the summary request when it can be, else on its own.

Compaction lets the agent's memory flusher save the durable facts of a prefix before a summary
replaces it. When the summary is written in context (it repeats the cached prefix of the last
reasoning request) and the flusher can read the conversation from there
(:class:`~harnessed.capabilities.hooks.FactsInContext`, with the same model), the facts are
asked for in that same request: the conversation is read once, from the provider's cache. In
every other case — no such flusher, another memory model, a summary from a transcript, an
answer whose facts part is missing or unreadable, a failed summary — the flusher reads the
prefix itself (:meth:`~harnessed.capabilities.hooks.MemoryFlusher.flush`), once.

A flush never stops a summary: its errors are logged and named in the ``compaction_end``
event (``flush_error``).
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping, Sequence
from typing import Any

from harnessed.capabilities.hooks import FactsInContext, FactsRequest, MemoryFlusher
from harnessed.capabilities.seam import PrepareInfo
from harnessed.compaction.markers import is_summary
from harnessed.messages import Msg

__all__ = ["PreSummaryFlush"]

logger = logging.getLogger(__name__)


class PreSummaryFlush:
    """The flush of ``prefix`` for one compaction (``flusher`` ``None``: no flush)."""

    def __init__(
        self,
        flusher: MemoryFlusher | None,
        prefix: Sequence[Msg],
        info: PrepareInfo,
        end: MutableMapping[str, Any],
    ) -> None:
        self.flusher = flusher
        self.messages = [m for m in prefix if not is_summary(m)]
        self.info = info
        self.end = end
        self.done = flusher is None

    async def facts_request(self) -> FactsRequest | None:
        """What to add to an in-context summary request, or ``None`` (flush on its own)."""
        flusher = self.flusher
        if self.done or not isinstance(flusher, FactsInContext):
            return None
        try:
            return await flusher.facts_request(self.info)
        except Exception as exc:
            logger.warning("memory facts request could not be made; flushing on its own: %s", exc)
            return None

    async def save(self, request: FactsRequest | None, answer: str | None) -> None:
        """Hand the facts part of an in-context answer to memory; without one, or when memory
        cannot read it, flush on its own."""
        if request is not None and answer is not None and not self.done:
            try:
                saved = await request.save(answer)
            except Exception as exc:
                logger.warning("memory facts of the summary could not be saved: %s", exc)
                saved = False
            if saved:
                self.done = True
                return
            logger.info("the summary's memory facts were unreadable; flushing a transcript")
        await self.on_its_own()

    async def on_its_own(self) -> None:
        """The flusher reads the prefix itself (once; later calls do nothing)."""
        if self.done:
            return
        self.done = True
        assert self.flusher is not None
        try:
            await self.flusher.flush(self.messages, self.info, reason="compaction")
        except Exception as exc:
            logger.warning("memory flush before compaction failed (ignored): %s", exc)
            self.end["flush_error"] = type(exc).__name__
