"""Messages and their content blocks.

A :class:`Msg` is one turn of a conversation: a role, a list of content blocks, an optional
name, free-form metadata, a stable id and a UTC timestamp. Messages are immutable; use
:meth:`Msg.replace` to derive a changed copy. ``Msg.to_dict`` / ``Msg.from_dict`` (and the JSON
variants) round-trip exactly.

Tool results are carried by messages with role ``"tool"``, one :class:`ToolResultBlock` each,
placed after the assistant message that holds the matching :class:`ToolUseBlock`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count
from operator import is_not
from typing import Any, Literal, TypeAlias, get_args

from harnessed._internal.clock import now_iso

__all__ = [
    "INVALID_ARGUMENTS_KEY",
    "clean_text",
    "ContentBlock",
    "ImageBlock",
    "Msg",
    "Role",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "new_id",
    "shared_prefix",
]

INVALID_ARGUMENTS_KEY = "__invalid_arguments__"
"""Key under which a model adapter stores tool-call arguments that were not a JSON object.

``ToolUseBlock.input == {INVALID_ARGUMENTS_KEY: raw_text}`` marks such a call; the toolkit turns
it into an error tool result that quotes the raw text, so the model can correct itself.
"""

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
_ROLES: frozenset[str] = frozenset(get_args(Role))


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with UTF-16 surrogates repaired: a split pair becomes its character again and a
    lone half becomes U+FFFD, so the text can always be written as UTF-8.

    Some gateways split characters outside the BMP into two escaped halves across stream
    chunks; joined naively they are unencodable and would break logs and state files.
    """
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def new_id(prefix: str = "") -> str:
    """Return a fresh random identifier (32 hex characters, optionally prefixed)."""
    return f"{prefix}{os.urandom(16).hex()}"  # 128 random bits, like uuid4 at a fifth the cost


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Plain text."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """Model reasoning. ``signature`` is the provider's opaque proof, echoed back verbatim.

    ``redacted`` holds reasoning the provider returned encrypted instead of as text (Anthropic's
    redacted thinking); it has no readable ``thinking`` and must be sent back unchanged.
    """

    thinking: str
    signature: str | None = None
    redacted: str | None = None
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool call requested by the model. ``input`` holds the decoded arguments."""

    id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image given either by ``url`` or by base64 ``data`` with its ``media_type``."""

    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    type: Literal["image"] = "image"

    def __post_init__(self) -> None:
        if (self.url is None) == (self.data is None):
            raise ValueError("ImageBlock needs exactly one of 'url' or 'data'")
        if self.data is not None and not self.media_type:
            raise ValueError("ImageBlock with 'data' needs a 'media_type' (e.g. 'image/png')")


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """The outcome of one tool call, matched to it by ``tool_use_id``.

    ``images`` are pictures the tool returned besides its text (e.g. an MCP tool's image
    content); providers that cannot put images in a tool result get them right after it.
    """

    tool_use_id: str
    content: str
    is_error: bool = False
    name: str | None = None
    images: tuple[ImageBlock, ...] = ()
    type: Literal["tool_result"] = "tool_result"

    def __post_init__(self) -> None:
        if not isinstance(self.images, tuple):
            object.__setattr__(self, "images", tuple(self.images))
        for image in self.images:
            if not isinstance(image, ImageBlock):
                raise TypeError(f"ToolResultBlock.images must hold ImageBlock, got {image!r}")


ContentBlock: TypeAlias = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock

_BLOCK_TYPES: dict[str, type[Any]] = {
    "text": TextBlock,
    "thinking": ThinkingBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
    "image": ImageBlock,
}


_FIELD_NAMES: dict[type, frozenset[str]] = {}
_FIELD_ORDER: dict[type, tuple[str, ...]] = {}


def block_to_dict(block: ContentBlock) -> dict[str, Any]:
    """Serialize one content block to plain JSON-compatible data."""
    cls = type(block)
    names = _FIELD_ORDER.get(cls)
    if names is None:
        names = _FIELD_ORDER[cls] = tuple(f.name for f in dataclasses.fields(block))
    data: dict[str, Any] = {}
    for name in names:
        value = getattr(block, name)
        if name == "input":
            value = dict(value)
        elif name == "images":
            if not value:
                continue  # results without images keep their old serialized form
            value = [block_to_dict(image) for image in value]
        data[name] = value
    return data


def block_from_dict(data: Mapping[str, Any]) -> ContentBlock:
    """Rebuild a content block from :func:`block_to_dict` output."""
    kind = data.get("type")
    cls = _BLOCK_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown content block type {kind!r}")
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    unknown = data.keys() - names
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)} in {kind!r} block")
    if cls is ToolResultBlock and "images" in data:
        images = data["images"]
        if not isinstance(images, list):
            raise ValueError("tool_result 'images' must be a list of image blocks")
        data = {**data, "images": tuple(block_from_dict(i) for i in images)}
    block: ContentBlock = cls(**data)
    return block


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Msg:
    """One message of a conversation.

    ``content`` may be given as a string (one text block) or as a sequence of blocks; it is
    always stored as a tuple of blocks.
    """

    role: Role
    content: tuple[ContentBlock, ...]
    name: str | None = None
    id: str = field(default_factory=lambda: new_id("msg_"))
    metadata: Mapping[str, Any] = field(default_factory=dict)
    timestamp: str = field(default_factory=now_iso)

    def __init__(
        self,
        role: Role,
        content: str | Iterable[ContentBlock] = (),
        name: str | None = None,
        *,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timestamp: str | None = None,
    ) -> None:
        if role not in _ROLES:
            raise ValueError(f"Msg role must be one of {sorted(_ROLES)}, got {role!r}")
        blocks: tuple[ContentBlock, ...]
        if isinstance(content, str):
            blocks = (TextBlock(content),) if content else ()
        else:
            blocks = tuple(content)
            for block in blocks:
                if not isinstance(block, tuple(_BLOCK_TYPES.values())):
                    raise TypeError(f"Msg content must hold content blocks, got {block!r}")
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "content", blocks)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "id", id or new_id("msg_"))
        object.__setattr__(self, "metadata", dict(metadata or {}))
        object.__setattr__(self, "timestamp", timestamp or now_iso())

    # ----------------------------------------------------------------- views
    @property
    def text(self) -> str:
        """The concatenated text blocks (tool results included for ``tool`` messages)."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ToolResultBlock):
                parts.append(block.content)
        return "".join(parts)

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    @property
    def thinking(self) -> str:
        return "".join(b.thinking for b in self.content if isinstance(b, ThinkingBlock))

    def __hash__(self) -> int:
        return hash(self.id)

    def replace(self, **changes: Any) -> Msg:
        """Return a copy with the given fields changed (the id is kept unless given)."""
        values: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "name": self.name,
            "id": self.id,
            "metadata": self.metadata,
            "timestamp": self.timestamp,
        }
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"Msg has no field(s) {sorted(unknown)}")
        values.update(changes)
        return Msg(**values)

    # ------------------------------------------------------------ factories
    @classmethod
    def user(cls, content: str | Iterable[ContentBlock], **kw: Any) -> Msg:
        return cls("user", content, **kw)

    @classmethod
    def assistant(cls, content: str | Iterable[ContentBlock], **kw: Any) -> Msg:
        return cls("assistant", content, **kw)

    @classmethod
    def system(cls, content: str | Iterable[ContentBlock], **kw: Any) -> Msg:
        return cls("system", content, **kw)

    @classmethod
    def tool_result(
        cls,
        tool_use_id: str,
        content: str,
        *,
        is_error: bool = False,
        name: str | None = None,
        **kw: Any,
    ) -> Msg:
        block = ToolResultBlock(tool_use_id, content, is_error=is_error, name=name)
        return cls("tool", (block,), name=name, **kw)

    # -------------------------------------------------------- serialization
    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "name": self.name,
            "content": [block_to_dict(b) for b in self.content],
            "metadata": dict(self.metadata),
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Msg:
        try:
            content = data["content"]
            role = data["role"]
        except KeyError as exc:
            raise ValueError(f"message data is missing field {exc.args[0]!r}") from None
        if not isinstance(content, Sequence) or isinstance(content, str):
            raise ValueError("message 'content' must be a list of blocks")
        return cls(
            role,
            [block_from_dict(b) for b in content],
            data.get("name"),
            id=data.get("id"),
            metadata=data.get("metadata") or {},
            timestamp=data.get("timestamp"),
        )

    def to_json(self) -> str:
        return clean_text(json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")))

    @classmethod
    def from_json(cls, text: str) -> Msg:
        return cls.from_dict(json.loads(text))


def shared_prefix(previous: Sequence[Msg], history: Sequence[Msg]) -> int:
    """How many leading messages two histories share as the same (or equal) messages.

    Messages are immutable, so an unchanged prefix is recognised without reading content: the
    usual case, a history that only grew, is one list comparison in C (identical objects
    compare equal at once); otherwise the first message that is not the same object ends it.
    """
    size = len(previous)
    if size <= len(history):
        head = history if size == len(history) else history[:size]
        if type(previous) is not list:
            previous = list(previous)
        if previous == (head if type(head) is list else list(head)):
            return size
    limit = min(size, len(history))
    # map/compress run in C: a 10,000-message comparison costs tens of microseconds
    first_different = next(compress(count(), map(is_not, previous, history)), None)
    return limit if first_different is None else first_different
