"""Token metering for request preparation: cached per message, calibrated by real usage.

Messages are immutable, so a message's count is computed once and remembered for as long as
the message lives; preparing a request therefore costs a dictionary lookup per unchanged
message. When the provider reports the real input size of a request, the ratio between that
and our raw estimate calibrates later estimates of the same session.
"""

from __future__ import annotations

import json
import math
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from harnessed.messages import Msg, shared_prefix
from harnessed.models.base import OutputFormat, ToolSchema
from harnessed.tokens import TokenEstimator

__all__ = ["HistoryMemo", "Meter", "shared_prefix"]

K = TypeVar("K")
V = TypeVar("V")

_MIN_RATIO, _MAX_RATIO = 0.5, 4.0
_TRACKED = 4_096


class HistoryMemo:
    """A running per-message sum over the last history seen, reused for its unchanged prefix.

    Preparing the next request of a session usually adds a few messages at the end; only
    those are counted again.
    """

    __slots__ = ("cumulative", "messages", "pairs_checked")

    def __init__(self) -> None:
        self.messages: list[Msg] = []
        self.cumulative: list[int] = []
        self.pairs_checked = 0
        """How many leading messages of ``messages`` are known to pair up correctly."""

    def shared_prefix(self, history: Sequence[Msg]) -> int:
        return shared_prefix(self.messages, history)

    def total(self, history: Sequence[Msg], count: Callable[[Msg], int]) -> int:
        """``sum(count(m) for m in history)``, counting only messages not seen last time.

        Afterwards ``cumulative[i]`` is the sum over ``history[: i + 1]``.
        """
        shared = self.shared_prefix(history)
        known = len(self.messages)
        if shared == known == len(history):  # the same history: nothing to copy or count
            return self.cumulative[-1] if self.cumulative else 0
        if shared < known:  # the history was rewritten after ``shared``: drop what changed
            del self.messages[shared:]
            del self.cumulative[shared:]
        cumulative = self.cumulative
        total = cumulative[-1] if cumulative else 0
        for message in history[shared:]:
            total += count(message)
            cumulative.append(total)
        self.messages.extend(history[shared:])
        self.pairs_checked = min(self.pairs_checked, shared)
        return total


class Meter:
    """Counts tokens with one estimator and keeps per-session calibration ratios."""

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator
        self._messages: weakref.WeakKeyDictionary[Msg, int] = weakref.WeakKeyDictionary()
        self._texts: OrderedDict[str, int] = OrderedDict()
        self._schemas: OrderedDict[tuple[str, str, int], int] = OrderedDict()
        self._ratios: OrderedDict[tuple[str, ...], float] = OrderedDict()
        self._pending: OrderedDict[str, tuple[tuple[str, ...], int]] = OrderedDict()

    # -------------------------------------------------------------- counting
    def message(self, message: Msg) -> int:
        count = self._messages.get(message)
        if count is None:
            count = self.estimator.count_message(message)
            self._messages[message] = count
        return count

    def messages(self, messages: Iterable[Msg]) -> int:
        return sum(self.message(m) for m in messages)

    def history(self, memo: HistoryMemo, history: Sequence[Msg]) -> int:
        """Total tokens of ``history``, re-measuring only messages not seen last time."""
        return memo.total(history, self.message)

    def text(self, text: str) -> int:
        count = self._texts.get(text)
        if count is None:
            count = self.estimator.count_text(text)
            _remember(self._texts, text, count, 2_048)
        return count

    def tools(self, schemas: Iterable[ToolSchema]) -> int:
        total = 0
        for schema in schemas:
            key = (schema.name, schema.description, id(schema.parameters))
            count = self._schemas.get(key)
            if count is None:
                body = json.dumps(dict(schema.parameters), ensure_ascii=False, sort_keys=True)
                count = 8 + self.estimator.count_text(
                    f"{schema.name}\n{schema.description}\n{body}"
                )
                _remember(self._schemas, key, count, 1_024)
            total += count
        return total

    def output(self, fmt: OutputFormat) -> int:
        """The tokens of a native structured output's schema (sent with the request)."""
        return self.tools((ToolSchema(fmt.name, fmt.description, fmt.schema),))

    # ----------------------------------------------------------- calibration
    def ratio(self, session: tuple[str, ...]) -> float:
        return self._ratios.get(session, 1.0)

    def method(self, session: tuple[str, ...]) -> str:
        ratio = self.ratio(session)
        if ratio == 1.0:
            return self.estimator.method
        return f"{self.estimator.method}+calibrated(x{ratio:.2f})"

    def calibrated(self, raw: int, session: tuple[str, ...]) -> int:
        return math.ceil(raw * self.ratio(session))

    def expect(self, model_call_id: str, session: tuple[str, ...], raw: int) -> None:
        """Remember the raw estimate of a request about to be sent."""
        _remember(self._pending, model_call_id, (session, raw), _TRACKED)

    def observe(self, model_call_id: str, input_tokens: int) -> None:
        """Calibrate with the provider's reported input size of a request we estimated."""
        pending = self._pending.pop(model_call_id, None)
        if pending is None or input_tokens <= 0:
            return
        session, raw = pending
        if raw <= 0:
            return
        measured = min(max(input_tokens / raw, _MIN_RATIO), _MAX_RATIO)
        previous = self._ratios.get(session)
        ratio = measured if previous is None else (previous + measured) / 2
        _remember(self._ratios, session, round(ratio, 4), _TRACKED)


def _remember(cache: OrderedDict[K, V], key: K, value: V, limit: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > limit:
        cache.popitem(last=False)
