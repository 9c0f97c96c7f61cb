"""Token estimation: one approximate counter used everywhere in harnessed.

The estimate is deliberately cheap (a few regular-expression scans, no vocabulary) but it does
better than a flat ``chars / 4`` on the text agents actually produce: CJK text costs close to
one token per character, and punctuation- and digit-heavy text (JSON tool output, code, logs)
costs far more than prose of the same length.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from harnessed.messages import (
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = ["ApproxTokenEstimator", "TokenEstimator", "default_estimator"]

# Han, kana, hangul, fullwidth forms and CJK punctuation.
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
# ASCII punctuation and digits: each tends to become its own token (digits in groups of 3).
_SYMBOL = re.compile(r"[!-/:-@\[-`{-~]")
_DIGIT = re.compile(r"[0-9]")
_NON_SPACE_WS = re.compile(r"\s+")

_MESSAGE_OVERHEAD = 4  # role and separators
_TOOL_CALL_OVERHEAD = 8
_IMAGE_TOKENS = 1_000


@runtime_checkable
class TokenEstimator(Protocol):
    """Counts tokens for budgeting. ``method`` names the counting method in manifests."""

    @property
    def method(self) -> str: ...

    @property
    def exact(self) -> bool: ...

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Msg) -> int: ...


class ApproxTokenEstimator:
    """A fast character-class estimate, usually within about 20 % of o200k on mixed text."""

    method = "approx-charclass"
    exact = False

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        cjk = len(_CJK.findall(text))
        symbols = len(_SYMBOL.findall(text))
        digits = len(_DIGIT.findall(text))
        rest = len(text) - cjk - symbols - digits
        estimate = cjk * 0.8 + symbols * 0.6 + digits / 2.5 + rest / 4.2
        return max(1, round(estimate))

    def count_message(self, message: Msg) -> int:
        total = _MESSAGE_OVERHEAD
        for block in message.content:
            if isinstance(block, TextBlock):
                total += self.count_text(block.text)
            elif isinstance(block, ThinkingBlock):
                total += self.count_text(block.thinking)
            elif isinstance(block, ToolUseBlock):
                args = json.dumps(dict(block.input), ensure_ascii=False)
                total += _TOOL_CALL_OVERHEAD + self.count_text(block.name) + self.count_text(args)
            elif isinstance(block, ToolResultBlock):
                total += _TOOL_CALL_OVERHEAD + self.count_text(block.content)
            elif isinstance(block, ImageBlock):
                total += _IMAGE_TOKENS
        return total

    def count_messages(self, messages: Iterable[Msg]) -> int:
        return sum(self.count_message(m) for m in messages)


_DEFAULT = ApproxTokenEstimator()


def default_estimator() -> ApproxTokenEstimator:
    """The shared default estimator instance."""
    return _DEFAULT
