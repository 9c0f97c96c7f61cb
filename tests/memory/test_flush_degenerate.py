"""A flush answer writes only real facts: bullets that only say "nothing" in markdown dress,
or hold no word, write nothing; a fact that merely starts with "None" or "No" is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.log import RecordType
from harnessed.memory.prompts import says_nothing
from harnessed.models import ScriptedModel
from tests.memory.helpers import ledger_path, memory_agent

CTX = RuntimeContext("u1", "s1")
EMPTY_BULLETS = [
    "- **Nothing**",
    "- `NOTHING`",
    "- (none)",
    "- _No new facts._",
    "- There are no new facts to add.",
    "- -",
    "- ...",
    "* #",
    "1. N/A",
]
REAL_FACTS = [
    "None of the staging servers have IPv6.",
    "No deploys on Fridays, by team rule.",
    "Nothing in the cache survives a restart.",
    "Empty the bins on Tuesday evenings.",
]


@pytest.mark.parametrize("answer", EMPTY_BULLETS)
async def test_a_bullet_that_says_nothing_writes_nothing(tmp_path: Path, answer: str) -> None:
    agent = memory_agent(tmp_path, ScriptedModel([answer]), flush_after_call="always")
    await agent.call("hello", CTX)
    await agent.close()
    assert not ledger_path(tmp_path).exists()
    flushes = await agent.session_log(CTX, types=[RecordType.MEMORY_FLUSH])
    assert [r.payload["status"] for r in flushes] == ["nothing"]


async def test_facts_that_start_with_none_or_no_are_kept(tmp_path: Path) -> None:
    answer = "\n".join(f"- {fact}" for fact in REAL_FACTS)
    agent = memory_agent(tmp_path, ScriptedModel([answer]), flush_after_call="always")
    await agent.call("notes from the ops meeting", CTX)
    await agent.close()
    text = ledger_path(tmp_path).read_text()
    for fact in REAL_FACTS:
        assert f"- {fact}\n" in text


@pytest.mark.parametrize("text", ["NOTHING", "None.", "no new information", "---", "  "])
def test_says_nothing(text: str) -> None:
    assert says_nothing(text)


@pytest.mark.parametrize("text", [*REAL_FACTS, "# Memory\n- Tea.", "Unchanged: the key rotates"])
def test_says_something(text: str) -> None:
    assert not says_nothing(text)
