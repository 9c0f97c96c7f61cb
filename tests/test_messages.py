"""Msg and content blocks: construction, views and exact JSON round trip."""

from __future__ import annotations

import json

import pytest

from harnessed import ImageBlock, Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock


def full_message() -> Msg:
    return Msg(
        "assistant",
        [
            ThinkingBlock("let me think", signature="sig=="),
            TextBlock("Calling tools — ünïcode ✓ 中文"),
            ToolUseBlock("call_1", "search", {"q": "x", "n": 3, "nested": {"a": [1, 2]}}),
            ImageBlock(url="https://example.com/a.png"),
            ImageBlock(data="aGVsbG8=", media_type="image/png"),
        ],
        name="helper",
        metadata={"model": "m", "score": 0.5, "tags": ["a"]},
    )


def test_exact_json_round_trip() -> None:
    original = full_message()
    restored = Msg.from_json(original.to_json())
    assert restored == original
    assert restored.to_dict() == original.to_dict()
    assert restored.id == original.id and restored.timestamp == original.timestamp
    assert json.loads(original.to_json())["content"][2]["input"]["nested"] == {"a": [1, 2]}


def test_tool_result_round_trip_keeps_error_flag() -> None:
    msg = Msg.tool_result("call_1", "boom", is_error=True, name="search")
    restored = Msg.from_dict(json.loads(msg.to_json()))
    assert restored.tool_results == [ToolResultBlock("call_1", "boom", True, "search")]
    assert restored.role == "tool" and restored.text == "boom"


def test_views_and_defaults() -> None:
    msg = full_message()
    assert msg.text == "Calling tools — ünïcode ✓ 中文"
    assert msg.thinking == "let me think"
    assert [c.id for c in msg.tool_uses] == ["call_1"]
    assert Msg.user("hi").content == (TextBlock("hi"),)
    assert Msg.user("").content == ()
    assert Msg.user("a").id != Msg.user("a").id
    assert Msg.user("a").timestamp.endswith("+00:00")


def test_replace_keeps_id_and_validates_fields() -> None:
    msg = Msg.user("a", metadata={"k": 1})
    changed = msg.replace(content=[TextBlock("b")])
    assert changed.id == msg.id and changed.text == "b" and msg.text == "a"
    with pytest.raises(TypeError, match="no field"):
        msg.replace(colour="red")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"role": "user"}, "missing field 'content'"),
        ({"role": "boss", "content": []}, "role must be one of"),
        ({"role": "user", "content": [{"type": "video"}]}, "unknown content block type"),
        ({"role": "user", "content": [{"type": "text", "text": "a", "x": 1}]}, "unknown field"),
        ({"role": "user", "content": "plain"}, "must be a list"),
    ],
)
def test_bad_data_is_rejected_with_a_clear_error(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Msg.from_dict(data)


def test_image_block_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ImageBlock()
    with pytest.raises(ValueError, match="media_type"):
        ImageBlock(data="abc")


def test_content_must_be_blocks() -> None:
    with pytest.raises(TypeError, match="content blocks"):
        Msg("user", ["not a block"])  # type: ignore[list-item]
