"""The gateway: channel identities → sessions, routing by agent, a limit on running turns."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harnessed.gateway import ChannelIdentity, Gateway, UnknownAgentError
from harnessed.sessions import TurnSlots
from tests.gateway.helpers import Tools, make_agent


def test_a_channel_identity_always_maps_to_the_same_session() -> None:
    one = ChannelIdentity("slack", "T1", "U42")
    assert one.session_id == ChannelIdentity("slack", "T1", "U42").session_id
    assert one.session_id.startswith("slack-")
    others = {
        ChannelIdentity("slack", "T1", "U43").session_id,
        ChannelIdentity("slack", "T2", "U42").session_id,
        ChannelIdentity("mail", "T1", "U42").session_id,
    }
    assert one.session_id not in others and len(others) == 3
    with pytest.raises(ValueError, match="peer"):
        ChannelIdentity("slack", "T1", "")


async def test_deliver_routes_to_the_named_agent_and_the_identity_session(
    tmp_path: Path,
) -> None:
    tools = Tools()
    one = make_agent(tmp_path / "a", tools, name="one")
    two = make_agent(tmp_path / "b", tools, name="two")
    gateway = Gateway([one, two], default_agent="two")
    peer = ChannelIdentity("chat", "bot", "ann")
    turn = await gateway.deliver(peer, "hello", agent="one", idempotency_key="m1")
    assert (await turn.result()).reply.text.startswith("You said: hello")
    again = await gateway.deliver(peer, "hello", agent="one", idempotency_key="m1")
    assert again.id == turn.id
    session = gateway.session_for(peer, agent="one")
    assert session.session_id == peer.session_id and session.user_id == "chat:bot:ann"
    assert (await session.history())[0].text == "hello"
    assert gateway.agent() is two
    with pytest.raises(UnknownAgentError, match="ghost"):
        gateway.agent("ghost")
    with pytest.raises(ValueError, match="default_agent"):
        Gateway([one], default_agent="two")


async def test_running_turns_are_limited_per_process(tmp_path: Path) -> None:
    tools = Tools()
    gateway = Gateway(make_agent(tmp_path, tools), max_running_turns=1)
    first = gateway.session("u", "first")
    second = gateway.session("u", "second")
    t1 = await first.submit("wait a moment")
    while not tools.started.is_set():
        await asyncio.sleep(0.01)
    t2 = await second.submit("and you")
    await asyncio.sleep(0.2)
    assert t1.status == "running" and t2.status == "queued"  # another session, still waiting
    tools.release.set()
    assert (await t1.result()).status == "completed"
    assert (await t2.result()).status == "completed"
    with pytest.raises(ValueError, match="at least 1"):
        TurnSlots(0)
