"""RuntimeContext defaults and SessionLocks behaviour."""

from __future__ import annotations

import asyncio

import pytest

from harnessed import RuntimeContext
from harnessed.runtime import SessionLocks


def test_resolved_context_defaults_session_and_run() -> None:
    ctx = RuntimeContext("u1").resolved("agent-a")
    assert ctx.session_id == "agent-a" and ctx.run_id and ctx.run_id.startswith("run_")
    kept = RuntimeContext("u1", "s", "r", {"tenant": "t"}).resolved("agent-a")
    assert (kept.session_id, kept.run_id, kept.extras["tenant"]) == ("s", "r", "t")


@pytest.mark.parametrize("kwargs", [{"user_id": ""}, {"session_id": ""}, {"run_id": ""}])
def test_empty_ids_are_rejected(kwargs: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        RuntimeContext(**kwargs)


async def test_locks_serialize_one_key_and_are_dropped_when_idle() -> None:
    locks = SessionLocks()
    log: list[str] = []

    async def work(key: str, label: str) -> None:
        async with locks.hold("agent", key):
            log.append(f"in {label}")
            await asyncio.sleep(0.02)
            log.append(f"out {label}")

    await asyncio.gather(work("s1", "a"), work("s1", "b"), work("s2", "c"))
    a_b = [entry for entry in log if entry[-1] in "ab"]
    assert a_b in (["in a", "out a", "in b", "out b"], ["in b", "out b", "in a", "out a"])
    assert log.index("in c") < log.index("out a")  # the other session overlapped
    assert len(locks) == 0


def test_locks_work_across_event_loops() -> None:
    locks = SessionLocks()

    async def once() -> None:
        async with locks.hold("k"):
            await asyncio.sleep(0)

    asyncio.run(once())
    asyncio.run(once())  # a lock bound to the first loop would fail here
    assert len(locks) == 0


def test_a_session_ref_names_the_empty_part_and_has_one_text_form() -> None:
    import pytest

    from harnessed import RuntimeContext, SessionRef

    with pytest.raises(ValueError, match=r"SessionRef\.user_id must be a non-empty string"):
        SessionRef("agent", "", "s1")
    ref = SessionRef.of("agent", RuntimeContext(user_id="u", session_id="s1"))
    assert ref == SessionRef("agent", "u", "s1")
    assert ref.token == '["agent", "u", "s1"]'
    assert hash(ref) == hash(SessionRef("agent", "u", "s1"))
