"""Session scopes, answers to questions, and the gateway's channel table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnessed.gateway import ChannelIdentity, Gateway
from harnessed.gateway.channels import (
    Address,
    SessionScope,
    WebhookChannel,
    WebhookConfig,
    answer_of,
    route,
)
from tests.gateway.channels.helpers import Gate, make_agent
from tests.gateway.helpers import Tools


def test_scopes_share_what_they_say_and_never_two_peers() -> None:
    slack_ann = ChannelIdentity("slack", "T1", "ann")
    slack_ann_other_bot = ChannelIdentity("slack", "T2", "ann")
    feishu_ann = ChannelIdentity("feishu", "cli_1", "ann")
    slack_bob = ChannelIdentity("slack", "T1", "bob")
    everyone = [slack_ann, slack_ann_other_bot, feishu_ann, slack_bob]

    def ids(scope: SessionScope) -> list[str]:
        return [route(i, scope).session_id for i in everyone]

    a, b, c, d = ids(SessionScope.PEER)
    assert a == b == c and d != a
    a, b, c, d = ids(SessionScope.CHANNEL_PEER)
    assert a == b and len({a, c, d}) == 3
    a, b, c, d = ids(SessionScope.ACCOUNT_CHANNEL_PEER)
    assert len({a, b, c, d}) == 4
    assert a == slack_ann.session_id  # the gateway's own mapping
    # the user a session runs as follows the scope too (sessions belong to users)
    assert route(slack_ann, SessionScope.PEER).user_id == route(feishu_ann, "peer").user_id
    # peers whose names look alike once joined stay apart
    tricky = [ChannelIdentity("a", "b:c", "d"), ChannelIdentity("a:b", "c", "d")]
    assert tricky[0].session_id != tricky[1].session_id
    for scope in SessionScope:
        for identity in everyone:
            sid = route(identity, scope).session_id
            assert len(sid) <= 128 and sid[0].isalnum()


def test_answers_to_a_question() -> None:
    assert answer_of("yes") == (True, None)
    assert answer_of("  OK! ") == (True, None)
    assert answer_of("同意") == (True, None)
    assert answer_of("no") == (False, None)
    assert answer_of("no, use staging instead") == (False, "no, use staging instead")


def test_the_gateway_checks_its_channels(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, Gate(), Tools())
    hook = WebhookChannel(WebhookConfig(secret="s" * 16, callback_url="http://127.0.0.1/cb"))
    gateway = Gateway(agent, channels=[hook])
    with pytest.raises(ValueError, match="two channels"):
        gateway.add_channel(
            WebhookChannel(WebhookConfig(secret="s" * 16, callback_url="http://x/"))
        )
    with pytest.raises(TypeError):
        gateway.add_channel("slack")  # type: ignore[arg-type]
    assert Address.from_dict(Address("x", {"a": "1"}).to_dict()) == Address("x", {"a": "1"})


async def test_send_needs_text_and_a_known_target(tmp_path: Path) -> None:
    gateway = Gateway(make_agent(tmp_path, Gate(), Tools()))
    with pytest.raises(ValueError):
        await gateway.send(("u", "s"), "  ")
    with pytest.raises(TypeError):
        await gateway.send(42, "hi")  # type: ignore[arg-type]
    assert await gateway.send(("u", "s"), "hi") is False


class _Recording:
    """A chat channel that records what it sends and edits."""

    @staticmethod
    def make(stream: str) -> object:
        from harnessed.gateway.channels import ChannelConfig, ChatChannel, MessageKind

        class Recording(ChatChannel):
            def __init__(self) -> None:
                super().__init__(ChannelConfig(name="rec", stream=stream, min_update_chars=4))  # type: ignore[arg-type]
                self.log: list[tuple[str, str]] = []

            async def send(
                self, address: Address, text: str, *, kind: MessageKind = "message"
            ) -> str:
                self.log.append((kind, text))
                return "m1"

            async def update(self, address: Address, ref: str, text: str) -> bool:
                self.log.append(("edit:" + ref, text))
                return True

        return Recording()


async def test_edit_mode_streams_into_one_message_and_final_mode_sends_once(tmp_path: Path) -> None:
    from harnessed.gateway.channels import Inbound

    for stream in ("edit", "final"):
        channel: Any = _Recording.make(stream)
        gateway = Gateway(make_agent(tmp_path / stream, Gate(), Tools()), channels=[channel])
        await gateway.start()
        identity = ChannelIdentity("rec", "a", "ann")
        turn = await channel.handle(Inbound(identity, Address("rec", {"to": "ann"}), "stream this"))
        assert turn is not None and turn.status == "completed"
        final = "You said: stream this (message 1 here)"
        if stream == "final":
            assert channel.log == [("reply", final)]
        else:
            kinds = [k for k, _ in channel.log]
            assert kinds[0] == "update" and set(kinds[1:]) <= {"edit:m1"}  # one message
            assert channel.log[-1][1] == final and "reply" not in kinds
        await gateway.close()


async def test_an_answer_to_a_step_parked_by_a_stopped_server_continues_it(tmp_path: Path) -> None:
    import asyncio

    from harnessed.gateway.channels import Inbound

    tools = Tools()
    agent = make_agent(tmp_path, Gate(), tools)
    identity = ChannelIdentity("rec", "a", "ann")
    address = Address("rec", {"to": "ann"})
    first: Any = _Recording.make("final")
    gateway = Gateway(agent, channels=[first])
    await gateway.start()
    asking = asyncio.create_task(first.handle(Inbound(identity, address, "deploy prod")))
    async with asyncio.timeout(60):  # waits for the question, not for a time
        while not any(kind == "question" for kind, _ in first.log):
            await asyncio.sleep(0.01)
    await gateway.close()  # the server stops while the turn waits for the answer
    await asking
    assert tools.deployed == []

    second: Any = _Recording.make("final")
    gateway = Gateway(agent, channels=[second])
    await gateway.start()
    turn = await second.handle(Inbound(identity, address, "yes"))
    assert turn is not None
    assert second.log[-1] == ("reply", "Finished: deployed to prod")
    assert tools.deployed == ["prod"]
    await gateway.close()
