"""What the model sees of an MCP tool result or resource: text, with images kept as images.

* text content → its text; structured content → compact JSON when the server sent no text
  (servers usually send both, the text being the same JSON);
* images → :class:`~harnessed.messages.ImageBlock` (and a short note in the text saying so);
* embedded resources → their text under a header naming the URI; binary ones → a note with
  the MIME type and size (images among them become image blocks);
* resource links and audio → a one-line note (audio is not sent to the model).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass

import mcp_types as types

from harnessed.messages import ImageBlock

__all__ = ["MCPToolOutput", "render_contents", "render_result"]


@dataclass(frozen=True, slots=True)
class MCPToolOutput:
    """An MCP tool's result as our content: text for the model and any images."""

    text: str
    images: tuple[ImageBlock, ...] = ()
    is_error: bool = False

    def __str__(self) -> str:
        return self.text


def _size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        n = len(data) * 3 // 4
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes"


def render_result(result: types.CallToolResult) -> MCPToolOutput:
    """Map a ``CallToolResult`` (``isError`` included) to :class:`MCPToolOutput`."""
    parts: list[str] = []
    images: list[ImageBlock] = []
    has_text = False
    for block in result.content:
        if isinstance(block, types.TextContent):
            has_text = True
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            images.append(ImageBlock(data=block.data, media_type=block.mime_type))
            parts.append(f"[image {len(images)}: {block.mime_type}, {_size(block.data)}]")
        elif isinstance(block, types.AudioContent):
            parts.append(f"[audio: {block.mime_type}, {_size(block.data)} — not shown]")
        elif isinstance(block, types.ResourceLink):
            label = f" ({block.mime_type})" if block.mime_type else ""
            about = f": {block.description}" if block.description else ""
            parts.append(f"[resource link {block.uri}{label} — {block.name}{about}]")
        elif isinstance(block, types.EmbeddedResource):
            text, image = _contents(block.resource)
            parts.append(text)
            if image is not None:
                images.append(image)
    if result.structured_content is not None and not has_text:
        parts.append(
            json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        )
    text = "\n".join(p for p in parts if p)
    if result.is_error and not text:
        text = "the tool reported an error without a message"
    return MCPToolOutput(text, tuple(images), bool(result.is_error))


def _contents(
    item: types.TextResourceContents | types.BlobResourceContents,
) -> tuple[str, ImageBlock | None]:
    mime = item.mime_type or "unknown type"
    if isinstance(item, types.TextResourceContents):
        return f"[resource {item.uri} ({mime})]\n{item.text}", None
    if item.mime_type and item.mime_type.startswith("image/"):
        return (
            f"[resource {item.uri}: image {item.mime_type}, {_size(item.blob)}]",
            ImageBlock(data=item.blob, media_type=item.mime_type),
        )
    return f"[resource {item.uri}: binary {mime}, {_size(item.blob)} — not shown]", None


def render_contents(
    contents: Sequence[types.TextResourceContents | types.BlobResourceContents],
) -> str:
    """The text of a ``resources/read`` answer (binary parts as notes)."""
    texts: list[str] = []
    for item in contents:
        if isinstance(item, types.TextResourceContents):
            texts.append(item.text if len(contents) == 1 else f"[{item.uri}]\n{item.text}")
        else:
            texts.append(_contents(item)[0])
    return "\n\n".join(texts)
