"""Images a tool returned reach each provider on the wire in the form it accepts."""

from __future__ import annotations

from collections.abc import Callable

from harnessed.messages import ImageBlock, Msg, ToolResultBlock, ToolUseBlock
from harnessed.models.anthropic import AnthropicModel
from harnessed.models.base import ModelRequest
from tests.models.test_anthropic import make_model as make_model
from tests.models.test_anthropic import run as run_anthropic
from tests.models.test_anthropic import text_reply
from tests.models.test_openai import chunk, sse
from tests.models.test_openai import make_model as make_openai
from tests.models.test_openai import run as run_openai
from tests.support.http_server import LocalServer

PNG = ImageBlock(data="iVBORw0KGgo=", media_type="image/png")


def history() -> tuple[Msg, ...]:
    """Two parallel calls; the first returned an image besides its text."""
    return (
        Msg.user("Draw and count."),
        Msg.assistant([ToolUseBlock("c1", "chart", {}), ToolUseBlock("c2", "count", {})]),
        Msg("tool", (ToolResultBlock("c1", "[image 1: image/png]", name="chart", images=(PNG,)),)),
        Msg.tool_result("c2", "3", name="count"),
        Msg.user("Describe the chart."),
    )


def test_images_round_trip_through_serialization() -> None:
    message = history()[2]
    again = Msg.from_json(message.to_json())
    assert again == message and again.tool_results[0].images == (PNG,)
    plain = history()[3].to_dict()
    assert "images" not in plain["content"][0]  # results without images keep their old form


async def test_openai_gets_the_images_after_the_tool_messages(http_server: LocalServer) -> None:
    http_server.queue(sse(chunk(content="a bar chart"), chunk(finish="stop")))
    await run_openai(make_openai(http_server), ModelRequest(messages=history()))
    messages = http_server.requests[0].json()["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "tool", "tool", "user", "user"]
    images = messages[4]["content"]
    assert images[0] == {"type": "text", "text": "Images returned by tool call c1:"}
    assert images[1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }


async def test_anthropic_gets_the_images_inside_the_tool_result(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(text_reply())
    await run_anthropic(make_model(), ModelRequest(messages=history()))
    messages = http_server.requests[0].json()["messages"]
    first = messages[2]["content"][0]
    assert first["type"] == "tool_result" and first["tool_use_id"] == "c1"
    assert first["content"] == [
        {"type": "text", "text": "[image 1: image/png]"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
    ]
    assert messages[2]["content"][1]["content"] == "3"
