"""Configuration of the history transforms: eviction, pruning, argument truncation, summaries.

Every config is a frozen dataclass validated at construction; a wrong value raises an error
that names the field. The defaults are those of BEHAVIOUR.md sections 2 and 3.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harnessed.compaction.prompts import DEFAULT_SUMMARY_PROMPT, MESSAGES_PLACEHOLDER
from harnessed.models.base import Model
from harnessed.workspace.errors import PathOutsideWorkspaceError
from harnessed.workspace.paths import normalize_path

__all__ = [
    "DEFAULT_EVICTION_EXCLUDED_TOOLS",
    "DEFAULT_PRUNE_EXCLUDED_TOOLS",
    "CompactionConfig",
    "PruneConfig",
    "ToolResultEvictionConfig",
    "TruncateArgsConfig",
]

DEFAULT_EVICTION_EXCLUDED_TOOLS: frozenset[str] = frozenset(
    {
        "read_file",
        "write_file",
        "edit_file",
        "grep_files",
        "glob_files",
        "list_files",
        "memory_search",
        "memory_get",
        "session_search",
    }
)
"""Tools whose output is paged or bounded by design, so it is never written out to a file."""

DEFAULT_PRUNE_EXCLUDED_TOOLS: frozenset[str] = frozenset(
    {"read_file", "memory_search", "memory_get", "session_search"}
)
"""Tools whose old output stays in full: it is what the agent deliberately looked up."""


def _int(owner: str, name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{owner}.{name} must be an int >= {minimum}, got {value!r}")


def _names(owner: str, name: str, value: Any) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"{owner}.{name} must be a collection of tool names, got {value!r}")
    names = frozenset(value)
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ValueError(f"{owner}.{name} must hold non-empty tool names, got {bad!r}")
    return names


@dataclass(frozen=True, slots=True)
class ToolResultEvictionConfig:
    """Large tool results are written to a workspace file and replaced by a notice.

    Needs an agent with a workspace; an agent without one keeps results as they are (pruning
    and summaries still bound the history).
    """

    max_result_chars: int = 80_000
    """A result longer than this many characters is written out (exactly this many stays)."""
    preview_chars: int = 2_000
    """Characters of the head and of the tail shown in the notice (at most half the text each).
    When ``max_window_share`` sets a limit below ``max_result_chars`` (a window under 200k),
    the preview shrinks in the same proportion: at 32k, about 300 characters each (see
    ``preview``)."""
    path: str = "large_tool_results"
    """Workspace directory for the files; the isolation scope adds ``<agent>/<user>/…`` below."""
    excluded_tools: frozenset[str] = DEFAULT_EVICTION_EXCLUDED_TOOLS
    """Tools whose results are never written out (their output is already paged)."""
    max_window_share: float | None = 0.1
    """Also write out a result larger than this share of the request's input limit (at about
    4 characters a token), before it is first sent. The default, a tenth, is the reference's
    ``max_result_chars`` (80,000 characters, about 20,000 tokens) at a 200k window, scaled down
    for smaller windows: at 32k (an input limit of ~27k) a result over ~11,000 characters is
    written out, so one result cannot fill a small window, and a long run sends and re-sends
    less after each summary (see docs/cost.md). ``None``: only ``max_result_chars`` applies,
    whatever the window."""

    def limit(self, input_tokens: int) -> int:
        """The character limit for a request whose input limit is ``input_tokens``."""
        if self.max_window_share is None:
            return self.max_result_chars
        return max(min(self.max_result_chars, int(input_tokens * 4 * self.max_window_share)), 1)

    def preview(self, input_tokens: int) -> int:
        """The head and tail preview, in characters each, for a request whose input limit is
        ``input_tokens``: ``preview_chars`` scaled by how far the window's limit lies below
        ``max_result_chars``, so a notice keeps the same share of the limit at any window (a
        fixed 4,000-character preview would be over a third of the ~11,000-character limit at
        32k)."""
        limit = self.limit(input_tokens)
        if limit >= self.max_result_chars:
            return self.preview_chars
        return self.preview_chars * limit // self.max_result_chars

    def __post_init__(self) -> None:
        owner = "ToolResultEvictionConfig"
        _int(owner, "max_result_chars", self.max_result_chars, 1)
        share = self.max_window_share
        if share is not None and (
            isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1
        ):
            raise ValueError(f"{owner}.max_window_share must be in (0, 1] or None, got {share!r}")
        _int(owner, "preview_chars", self.preview_chars, 0)
        if not isinstance(self.path, str):
            raise TypeError(f"{owner}.path must be a string, got {self.path!r}")
        try:
            clean = normalize_path(self.path)
        except PathOutsideWorkspaceError as exc:
            raise ValueError(f"{owner}.path is not a workspace path: {exc}") from None
        if not clean:
            raise ValueError(f"{owner}.path must name a directory below the workspace root")
        object.__setattr__(self, "path", clean)
        object.__setattr__(
            self, "excluded_tools", _names(owner, "excluded_tools", self.excluded_tools)
        )


@dataclass(frozen=True, slots=True)
class PruneConfig:
    """Old, long tool output is shortened to a head and tail preview (no model call).

    The newest tool results are never touched: whole results, counted from the newest back,
    until they reach ``protect_tokens`` (the result crossing that line is kept too). Older output
    is pruned only once there is at least ``minimum_tokens`` of it, so pruning happens in
    worthwhile batches rather than one message at a time.
    """

    protect_tokens: int = 40_000
    """Tokens of the newest tool output that are always kept in full (whole results: the one
    crossing the line is kept too)."""
    minimum_tokens: int = 20_000
    """Prune only when the older, prunable output adds up to at least this many tokens."""
    max_output_chars: int = 2_000
    """Results longer than this become a preview of this many characters plus a marker."""
    excluded_tools: frozenset[str] = DEFAULT_PRUNE_EXCLUDED_TOOLS
    """Tools whose output is never pruned."""
    cache_aware: bool = True
    """Prune only where the provider's cached prefix changes anyway: the part of the history
    a summary replaces is pruned just before it is summarized (a smaller summary request; the
    log keeps every result whole), and output is pruned when the history does not fit its
    budget. ``False``: also prune whenever ``minimum_tokens`` of old output is prunable, which
    rewrites the prefix a provider had cached every few steps (the behaviour before)."""

    def __post_init__(self) -> None:
        owner = "PruneConfig"
        _int(owner, "protect_tokens", self.protect_tokens, 0)
        _int(owner, "minimum_tokens", self.minimum_tokens, 0)
        _int(owner, "max_output_chars", self.max_output_chars, 20)
        if not isinstance(self.cache_aware, bool):
            raise TypeError(f"{owner}.cache_aware must be a bool, got {self.cache_aware!r}")
        object.__setattr__(
            self, "excluded_tools", _names(owner, "excluded_tools", self.excluded_tools)
        )


@dataclass(frozen=True, slots=True)
class TruncateArgsConfig:
    """Long string arguments of old tool calls are cut short before summarizing (no model).

    Only calls before the kept tail are touched; message ids and metadata are kept, and the
    session log still holds every call in full.
    """

    max_arg_length: int = 2_000
    """A string argument longer than this many characters is truncated."""
    keep_chars: int = 20
    """Characters of a truncated argument that are kept."""
    marker: str = " … [argument truncated; the full call is in the session log]"
    """Appended to a truncated argument."""

    def __post_init__(self) -> None:
        owner = "TruncateArgsConfig"
        _int(owner, "max_arg_length", self.max_arg_length, 1)
        _int(owner, "keep_chars", self.keep_chars, 0)
        if self.keep_chars >= self.max_arg_length:
            raise ValueError(
                f"{owner}.keep_chars ({self.keep_chars}) must be smaller than max_arg_length "
                f"({self.max_arg_length})"
            )
        if not isinstance(self.marker, str):
            raise TypeError(f"{owner}.marker must be a string, got {self.marker!r}")


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    """When and how the earlier history is summarized.

    A summary is made when the history reaches ``trigger_messages`` messages or
    ``trigger_tokens`` tokens. The newest messages (the kept tail, see ``keep_tokens``) stay as
    they are; everything before them, earlier summaries included, is replaced by one summary
    message. A tool call and its results are never split by the cut.
    """

    trigger_messages: int = 50
    """Summarize when the history has at least this many messages."""
    trigger_tokens: int = 0
    """Summarize when the history reaches this many tokens (0 = the request's history budget,
    which also caps any larger value)."""
    keep_messages: int = 20
    """The kept tail in messages (used when ``keep_tokens`` is 0)."""
    keep_tokens: int = -1
    """The kept tail: -1 = dynamic (a quarter of the history budget, clamped to 2,000-8,000
    and to half the budget, or half of ``trigger_tokens`` when that is smaller), 0 =
    ``keep_messages`` messages, > 0 = that many tokens."""
    model: Model | str | None = None
    """The model that writes summaries (default: the agent's model)."""
    summary_prompt: str = field(default=DEFAULT_SUMMARY_PROMPT, repr=False)
    """The summary request; ``{messages}`` is replaced by a transcript of the messages."""
    flush_before_compact: bool = True
    """Let the agent's memory flusher extract durable facts from the prefix first."""
    truncate_args: TruncateArgsConfig | None = None
    """Cut long arguments of old tool calls before summarizing (off by default)."""
    max_summary_tokens: int = 4_000
    """Output limit of a summary request (also capped to a quarter of the history budget)."""
    in_context: bool = True
    """Write the summary with a request that repeats the last reasoning request's prefix (tools,
    system message, history) plus one instruction, so that the provider's prompt cache serves
    it and the model reads the messages themselves; ``summary_prompt`` is used only when that
    is not possible (another summary ``model``, a rewritten history, a request too large).
    ``False``: always summarize a transcript with ``summary_prompt``."""

    def __post_init__(self) -> None:
        owner = "CompactionConfig"
        _int(owner, "trigger_messages", self.trigger_messages, 2)
        _int(owner, "trigger_tokens", self.trigger_tokens, 0)
        _int(owner, "keep_messages", self.keep_messages, 1)
        _int(owner, "keep_tokens", self.keep_tokens, -1)
        _int(owner, "max_summary_tokens", self.max_summary_tokens, 64)
        if self.keep_tokens == 0 and self.keep_messages >= self.trigger_messages:
            raise ValueError(
                f"{owner}.keep_messages ({self.keep_messages}) must be smaller than "
                f"trigger_messages ({self.trigger_messages}), or nothing would be summarized"
            )
        if 0 < self.trigger_tokens <= self.keep_tokens:
            raise ValueError(
                f"{owner}.keep_tokens ({self.keep_tokens}) must be smaller than trigger_tokens "
                f"({self.trigger_tokens}), or nothing would be summarized"
            )
        if not isinstance(self.summary_prompt, str) or MESSAGES_PLACEHOLDER not in (
            self.summary_prompt
        ):
            raise ValueError(
                f"{owner}.summary_prompt must contain the {MESSAGES_PLACEHOLDER} placeholder "
                "(where the transcript of the summarized messages goes)"
            )
        if not isinstance(self.flush_before_compact, bool):
            raise TypeError(f"{owner}.flush_before_compact must be a bool")
        if not isinstance(self.in_context, bool):
            raise TypeError(f"{owner}.in_context must be a bool, got {self.in_context!r}")
        if self.truncate_args is not None and not isinstance(
            self.truncate_args, TruncateArgsConfig
        ):
            raise TypeError(f"{owner}.truncate_args must be a TruncateArgsConfig or None")
        if isinstance(self.model, str):
            if not self.model.strip():
                raise ValueError(f"{owner}.model must be a non-empty model name or a Model")
        elif self.model is not None and not isinstance(self.model, Model):
            raise TypeError(f"{owner}.model must be a Model, a model name or None")

    def trigger_for(self, history_budget: int) -> int:
        """The token trigger for a request with the given history budget (never above it: a
        history over its budget cannot be sent)."""
        if self.trigger_tokens:
            return min(self.trigger_tokens, history_budget)
        return history_budget

    def dynamic_keep(self, history_budget: int) -> int:
        """The kept tail in tokens when ``keep_tokens`` is -1."""
        keep = min(max(history_budget // 4, 2_000), 8_000)
        return max(min(keep, self.trigger_for(history_budget) // 2), 0)
