"""Text holding a lone UTF-16 surrogate (a tool that decoded bytes with ``surrogateescape``, a
server that split an emoji) is indexed, repaired, without an error in the log, and found.

Before the fix each such append logged a traceback ("could not index session …") from SQLite,
tantivy or PostgreSQL, and the session stayed behind until the next search rebuilt it.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harnessed import HarnessAgent, Msg, RuntimeContext, tool
from harnessed.log import NewRecord
from harnessed.messages import ToolUseBlock
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.runtime import SessionRef
from harnessed.stores import (
    IndexedSessionLogStore,
    JsonlSessionLogStore,
    ScanSearchIndex,
    SqliteSearchIndex,
    TantivySearchIndex,
)
from tests.support.postgres import postgres_store

HAS_TANTIVY = importlib.util.find_spec("tantivy") is not None
BACKENDS = [
    "sqlite",
    pytest.param(
        "tantivy", marks=pytest.mark.skipif(not HAS_TANTIVY, reason="tantivy not installed")
    ),
    "scan",
    "postgres",
]
KEY = SessionRef("agent", "alice", "s1")
BROKEN = [
    "zebrafish report \ud83d and more",  # the first half of a pair, alone
    "the \udc00 zebrafish tail",  # the second half, alone
    "zebra\udfffcrossing zebrafish",  # inside a word
]


@pytest.fixture(params=BACKENDS)
async def log(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[IndexedSessionLogStore]:
    if request.param == "postgres":
        async for pg in postgres_store():
            indexed = IndexedSessionLogStore(pg.session_log(), pg.search_index())
            yield indexed
            await indexed.close()
        return
    store = JsonlSessionLogStore(tmp_path)
    index = {
        "sqlite": lambda: SqliteSearchIndex(tmp_path),
        "tantivy": lambda: TantivySearchIndex(tmp_path),
        "scan": lambda: ScanSearchIndex(store),
    }[request.param]()
    indexed = IndexedSessionLogStore(store, index)
    yield indexed
    await indexed.close()


def problems(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        f"{r.levelname} {r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("harnessed")
    ]


async def test_lone_surrogates_are_indexed_without_errors_and_found(
    log: IndexedSessionLogStore, caplog: pytest.LogCaptureFixture
) -> None:
    await log.search(KEY.agent_id, KEY.user_id, "nothing")  # the index is built: appends index
    caplog.clear()
    with caplog.at_level(logging.INFO):
        for text in BROKEN:
            await log.append(KEY, [NewRecord.message(Msg.user(text), run_id="r", turn_id="t")])
        call = Msg.assistant([ToolUseBlock("c1", "note", {"text": "zebrafish \ud800 args"})])
        result = Msg.tool_result("c1", "zebrafish result \udbff", name="note")
        await log.append(
            KEY,
            [
                NewRecord.message(call, run_id="r", turn_id="t"),
                NewRecord.message(result, run_id="r", turn_id="t"),
            ],
        )
        assert problems(caplog) == []
        hits = await log.search(KEY.agent_id, KEY.user_id, "zebrafish", max_results=20)
        assert problems(caplog) == []
    assert len(hits) == 5
    for hit in hits:
        hit.text.encode("utf-8")  # valid text: the surrogates became U+FFFD
        assert "\ufffd" in hit.text
    found = {h.text for h in hits}
    assert "zebrafish report \ufffd and more" in found
    # the words on both sides of a repaired character are words of their own
    crossing = await log.search(KEY.agent_id, KEY.user_id, "crossing zebrafish")
    assert [h.text for h in crossing] == ["zebra\ufffdcrossing zebrafish"]
    # a query holding a lone surrogate looks for the words around it
    odd = await log.search(KEY.agent_id, KEY.user_id, "report \ud83d and")
    assert [h.text for h in odd] == ["zebrafish report \ufffd and more"]


@tool(read_only=True)
def read_bytes() -> str:
    """Return what a file held, decoded the way ``os.fsdecode`` does."""
    return b"zebrafish log \xff\xfe line".decode("utf-8", "surrogateescape")


async def test_through_an_agent_a_broken_tool_result_is_logged_quietly_and_found(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("read_bytes", id="c1")]), "read it"]
    )
    agent = HarnessAgent("agent", model, tools=[read_bytes], workspace=tmp_path)
    ctx = RuntimeContext(user_id="alice", session_id="s1")
    await agent.session_store.search("agent", "alice", "warm")
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert (await agent.call("read the log", ctx)).text == "read it"
        hits = await agent.session_store.search("agent", "alice", "zebrafish log")
    assert problems(caplog) == []
    assert [h.role for h in hits] == ["tool"]
    assert hits[0].text == "zebrafish log \ufffd\ufffd line"
    await agent.close()
