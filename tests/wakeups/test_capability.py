"""Wake-ups through the model's tools and the application API, fired by a dispatcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.sessions import Turn
from harnessed.wakeups import (
    MemoryWakeupStore,
    SqliteWakeupStore,
    Wakeup,
    WakeupDispatcher,
    WakeupError,
    WakeupLimitError,
    Wakeups,
    WakeupsConfig,
)
from tests.wakeups.helpers import Clock, make_agent, woken_notes

CTX = RuntimeContext("alice", "s1")


def wake(**args: object) -> str:
    return "wake me " + json.dumps(args)


async def test_the_model_schedules_a_wakeup_that_fires_once_with_its_note(tmp_path: Path) -> None:
    clock = Clock()
    agent = make_agent(tmp_path, clock)
    wakeups = agent.capability(Wakeups)
    assert wakeups is not None and isinstance(wakeups.store, SqliteWakeupStore)
    reply = await agent.call(wake(note="check the build", after_seconds=3600), CTX)
    assert "scheduled for" in reply.text
    [pending] = await wakeups.pending(CTX)
    assert pending.note == "check the build" and pending.due_at == clock.now + 3600
    dispatcher = WakeupDispatcher([agent], clock=clock)
    assert await dispatcher.run_due() == []  # not due yet
    clock.now += 3600
    [turn] = await dispatcher.run_due()
    end = await turn.result()
    assert end.status == "completed" and end.reply.text == "woken: check the build"
    assert await dispatcher.run_due() == [] and await wakeups.pending(CTX) == []
    messages = await agent.session_messages(CTX)
    assert woken_notes(agent, messages) == ["check the build"]
    await agent.close()


async def test_a_cron_wakeup_fires_at_each_time_and_catches_up_once(tmp_path: Path) -> None:
    clock = Clock(1_800_000_000.0)  # 2027-01-15T08:00:00Z
    agent = make_agent(tmp_path, clock)
    wakeups = agent.capability(Wakeups)
    assert wakeups is not None
    first = await wakeups.schedule(CTX, "hourly check", cron="0 * * * *")
    assert first.due_at == 1_800_003_600.0
    dispatcher = WakeupDispatcher([agent], clock=clock)
    clock.now = first.due_at
    [turn] = await dispatcher.run_due()
    await turn.result()
    [again] = await wakeups.pending(CTX)
    assert again.due_at == first.due_at + 3600 and again.fired == 1
    clock.now += 5 * 3600  # the process was down for five hours: one firing, not five
    [turn] = await dispatcher.run_due()
    await turn.result()
    [later] = await wakeups.pending(CTX)
    assert later.due_at > clock.now and later.fired == 2
    notes = woken_notes(agent, await agent.session_messages(CTX))
    assert notes == ["hourly check", "hourly check"]
    await agent.close()


async def test_wakeups_are_listed_and_cancelled_per_session_only(tmp_path: Path) -> None:
    clock = Clock()
    agent = make_agent(tmp_path, clock)
    wakeups = agent.capability(Wakeups)
    assert wakeups is not None
    mine = await wakeups.schedule(CTX, "mine", after=60)
    other = await wakeups.schedule(RuntimeContext("alice", "s2"), "other session", after=60)
    bob = await wakeups.schedule(RuntimeContext("bob", "s1"), "bob's", after=60)
    listed = await agent.call("list", CTX)
    assert mine.id in listed.text and other.id not in listed.text and bob.id not in listed.text
    # another session (or another user) cannot cancel it, even knowing its id
    refused = await agent.call(f"cancel {mine.id}", RuntimeContext("alice", "s2"))
    assert "no pending wake-up" in refused.text
    assert await wakeups.cancel(RuntimeContext("bob", "s1"), mine.id) is None
    done = await agent.call(f"cancel {mine.id}", CTX)
    assert "cancelled" in done.text and await wakeups.pending(CTX) == []
    everything = await wakeups.pending(RuntimeContext("alice", "x"), all_sessions=True)
    assert [w.id for w in everything] == [other.id]
    await agent.close()


async def test_wakeups_are_bounded_per_user(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, max_per_user=2)
    wakeups = agent.capability(Wakeups)
    assert wakeups is not None
    await wakeups.schedule(CTX, "one", after=60)
    await wakeups.schedule(RuntimeContext("alice", "s2"), "two", after=60)
    with pytest.raises(WakeupLimitError, match="already has 2"):
        await wakeups.schedule(CTX, "three", after=60)
    await wakeups.schedule(RuntimeContext("bob", "s1"), "bob is not alice", after=60)
    reply = await agent.call(wake(note="four", after_seconds=60), CTX)
    assert "already has 2" in reply.text  # the model reads why
    await agent.close()


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({}, "exactly one"),
        ({"after": 60, "cron": "0 * * * *"}, "exactly one"),
        ({"after": 0}, "at least 1 seconds ahead"),
        ({"after": -5}, "at least"),
        ({"after": float("nan")}, "at least"),
        ({"after": 10**12}, "at most"),
        ({"at": "yesterday"}, "ISO-8601"),
        ({"at": "2001-01-01T00:00:00Z"}, "at least"),
        ({"cron": "* * * * * *"}, "more often"),
        ({"cron": "* * * * *"}, "more often than every 300"),
        ({"cron": "61 * * * *"}, "not valid"),
        ({"cron": "0 0 30 2 *"}, "not valid"),
        ({"cron": ""}, "cron must be"),
    ],
)
async def test_bad_schedules_are_refused_with_a_reason(
    args: dict[str, object], problem: str
) -> None:
    agent = make_agent(None)
    wakeups = agent.capability(Wakeups)
    assert wakeups is not None and isinstance(wakeups.store, MemoryWakeupStore)
    with pytest.raises(WakeupError, match=problem):
        await wakeups.schedule(CTX, "note", **args)  # type: ignore[arg-type]
    assert await wakeups.pending(CTX) == []
    await agent.close()


async def test_a_blank_or_huge_note_is_refused() -> None:
    agent = make_agent(None)
    wakeups = agent.capability(Wakeups)
    assert wakeups is not None
    with pytest.raises(WakeupError, match="note"):
        await wakeups.schedule(CTX, "  ", after=60)
    with pytest.raises(WakeupError, match="longer than"):
        await wakeups.schedule(CTX, "x" * 3000, after=60)
    await agent.close()


def test_the_config_names_the_wrong_field() -> None:
    with pytest.raises(ValueError, match="max_per_user"):
        WakeupsConfig(max_per_user=0)
    with pytest.raises(ValueError, match="claim_seconds"):
        WakeupsConfig(claim_seconds=float("inf"))
    with pytest.raises(ValueError, match="timezone"):
        WakeupsConfig(timezone="Mars/Olympus")
    with pytest.raises(ValueError, match="min_delay"):
        WakeupsConfig(min_delay=-1)


async def test_the_outbound_hooks_get_the_woken_turn_and_a_failing_one_harms_nothing(
    tmp_path: Path,
) -> None:
    clock = Clock()
    sent: list[tuple[str, str]] = []

    async def push(wakeup: Wakeup, turn: Turn) -> None:
        end = await turn.result()
        sent.append((wakeup.note, end.reply.text))

    async def broken(wakeup: Wakeup, turn: Turn) -> None:
        raise ConnectionError("the chat app is down")

    agent = make_agent(tmp_path, clock)
    wakeups = agent.capability(Wakeups)
    assert wakeups is not None
    wakeups.on_woken = push
    await wakeups.schedule(CTX, "tell alice", after=5)
    await wakeups.schedule(CTX, "tell alice again", after=6)
    clock.now += 10
    dispatcher = WakeupDispatcher([agent], on_woken=broken, clock=clock)
    turns = await dispatcher.run_due()
    assert len(turns) == 2
    await dispatcher.stop()  # waits for the hooks
    assert sent == [
        ("tell alice", "woken: tell alice"),
        ("tell alice again", "woken: tell alice again"),
    ]
    assert await wakeups.pending(CTX) == []
    await agent.close()
