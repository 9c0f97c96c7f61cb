"""The collector pause of bulk loads: nested and concurrent pauses, failures, and the
application's own setting."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext, ScriptedModel
from harnessed._internal.gcpause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on():
    gc.enable()
    yield
    gc.enable()


def test_a_pause_turns_the_collector_off_and_back_on():
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_and_overlapping_pauses_end_with_the_last_one():
    outer = gc_paused()
    outer.__enter__()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the outer pause is still running
    outer.__exit__(None, None, None)
    assert gc.isenabled()


def test_pauses_in_threads_keep_the_collector_off_until_all_end():
    inside = threading.Barrier(3)
    leave = threading.Event()

    def load() -> None:
        with gc_paused():
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    leave.set()
    for t in threads:
        t.join()
    assert gc.isenabled()


def test_a_failure_inside_still_turns_it_back_on():
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("read failed")
    assert gc.isenabled()


def test_a_collector_the_application_turned_off_stays_off():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


async def test_loading_a_session_from_its_log_leaves_the_collector_as_it_was(tmp_path: Path):
    ctx = RuntimeContext("u", "s")
    first = HarnessAgent("a", ScriptedModel(["one"]), workspace=tmp_path, memory=False)
    await first.call("hello", ctx)
    await first.close()
    second = HarnessAgent("a", ScriptedModel(["two"]), workspace=tmp_path, memory=False)
    reply = await second.call("again", ctx)  # the first load of the session replays its log
    await second.close()
    assert reply.text == "two"
    assert gc.isenabled()
    assert [m.text for m in await second.session_messages(ctx)] == ["hello", "one", "again", "two"]


async def test_a_long_log_is_replayed_in_bulk_and_the_collector_is_back_after(tmp_path: Path):
    """A log of over 1 MB and 2,000 records is parsed and applied with the collector paused;
    the history is complete and the collector runs again afterwards."""
    from harnessed.log import NewRecord
    from harnessed.messages import Msg
    from harnessed.runtime import SessionRef
    from harnessed.stores import JsonlSessionLogStore

    store = JsonlSessionLogStore(tmp_path / "agents")
    key = SessionRef("a", "u", "s")
    texts = [f"message {i} " + "x" * 600 for i in range(2_100)]
    await store.append(
        key, [NewRecord.message(Msg.user(t), run_id="r", turn_id="t") for t in texts]
    )
    assert (tmp_path / "agents").stat() and sum(
        p.stat().st_size for p in (tmp_path / "agents").rglob("*.jsonl")
    ) > 1 << 20
    agent = HarnessAgent("a", ScriptedModel(["ok"]), workspace=tmp_path, memory=False)
    messages = await agent.session_messages(RuntimeContext("u", "s"))
    await agent.close()
    assert [m.text for m in messages] == texts
    assert gc.isenabled()
