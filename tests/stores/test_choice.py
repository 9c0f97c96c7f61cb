"""One setting for the deployment: ``store=`` (PostgreSQL) or the workspace's own storage.

Two agent objects stand for two app servers: whatever one recorded, the other continues.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.log.record import RecordType
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.state import InMemoryStateStore, JsonFileStateStore
from harnessed.stores import FilesystemStateStore, SharedStore
from harnessed.stores.postgres import PostgresStore, PostgresTurnGate
from harnessed.workspace import Workspace
from tests.support import s3_server as s3_support
from tests.support.postgres import URL, postgres_store
from tests.support.s3_server import S3Server

s3_server = s3_support.s3_server  # the session-wide SeaweedFS fixture

CTX = RuntimeContext("alice", "s1")


class Recording(ScriptedModel):
    """Answers "reply N" and keeps what each request held."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        super().__init__(responder=self._answer)

    def _answer(self, request: ModelRequest) -> str:
        self.seen.append([m.text for m in request.messages if m.role in ("user", "assistant")])
        return f"reply {len(self.seen)}"


@pytest.fixture
async def pg() -> AsyncIterator[PostgresStore]:
    async for store in postgres_store():
        yield store


async def continue_on_a_second_server(**settings: object) -> None:
    first, second = Recording(), Recording()
    a = HarnessAgent("bot", first, memory=False, **settings)  # type: ignore[arg-type]
    b = HarnessAgent("bot", second, memory=False, **settings)  # type: ignore[arg-type]
    await a.call("remember the blue door", CTX)
    await a.begin_task(CTX, "t1", "paint the door")  # structured state: saved to the store
    await b.call("which door?", CTX)
    seen = second.seen[-1]
    assert seen[:3] == ["remember the blue door", "reply 1", "which door?"]
    assert "objective: paint the door" in seen[3]  # b's request shows a's task
    messages = [m.text for m in await a.session_messages(CTX)]
    assert messages == ["remember the blue door", "reply 1", "which door?", "reply 1"]
    task = await b.task_state(CTX)
    assert task is not None and task.objective == "paint the door"
    assert (await a.load_state(CTX)).version == (await b.load_state(CTX)).version > 0
    hits = await a.session_search("blue door", "alice")
    assert [(h.session_id, h.seq) for h in hits][:1] and hits[0].text == "remember the blue door"
    await a.close()
    await b.close()


async def test_a_postgres_store_is_shared_by_app_servers(pg: PostgresStore) -> None:
    await continue_on_a_second_server(store=pg)
    agent = HarnessAgent("bot", ScriptedModel(), memory=False, store=pg)
    assert agent.store is pg and isinstance(pg, SharedStore)
    runs = await agent.session_log(CTX, types=[RecordType.RUN_START])
    assert len(runs) == 2
    assert await agent.state_store.list_sessions("bot", "alice") == ["s1"]
    assert isinstance(agent.turn_gate, PostgresTurnGate)  # agent.session(ctx) uses it


async def test_a_postgres_url_is_the_one_setting() -> None:
    from tests.support.postgres import require_postgres

    require_postgres()
    name = "url" + uuid.uuid4().hex[:10]  # the URL's default schema is shared: own agent name
    agent = HarnessAgent(name, Recording(), memory=False, store=URL)
    assert isinstance(agent.store, PostgresStore) and agent.store.schema == "public"
    await agent.call("hello over the url", CTX)
    again = HarnessAgent(name, Recording(), memory=False, store=URL)
    assert [m.text for m in await again.session_messages(CTX)] == ["hello over the url", "reply 1"]
    await agent.close()
    await again.close()


async def test_a_remote_workspace_keeps_state_in_its_storage() -> None:
    url = f"memory://harnessed-{uuid.uuid4().hex[:10]}"
    await continue_on_a_second_server(workspace=url)
    agent = HarnessAgent("bot", ScriptedModel(), memory=False, workspace=url)
    assert isinstance(agent.state_store, FilesystemStateStore)
    assert await agent.state_store.list_sessions("bot", "alice") == ["s1"]
    assert agent.workspace is not None
    assert await agent.workspace.fs.exists(".harnessed/state/bot/alice/s1.json")


async def test_an_s3_workspace_alone_keeps_sessions_in_the_bucket(s3_server: S3Server) -> None:
    url = s3_server.url(f"ws-{uuid.uuid4().hex[:10]}")

    def workspace() -> Workspace:  # each "server" opens the bucket itself
        return Workspace(url, storage_options=s3_server.storage_options)

    first, second = Recording(), Recording()
    a = HarnessAgent("bot", first, memory=False, workspace=workspace())
    await a.call("remember the blue door", CTX)
    await a.begin_task(CTX, "t1", "paint the door")
    await a.close()
    b = HarnessAgent("bot", second, memory=False, workspace=workspace())
    await b.call("which door?", CTX)
    assert second.seen[-1][:3] == ["remember the blue door", "reply 1", "which door?"]
    assert isinstance(b.state_store, FilesystemStateStore)
    assert await b.state_store.list_sessions("bot", "alice") == ["s1"]
    await b.close()


async def test_the_shared_deployment_s3_files_and_postgres(
    s3_server: S3Server, pg: PostgresStore
) -> None:
    url = s3_server.url(f"ws-{uuid.uuid4().hex[:10]}")
    ws = Workspace(url, storage_options=s3_server.storage_options)
    await continue_on_a_second_server(workspace=ws, store=pg)
    agent = HarnessAgent("bot", ScriptedModel(), memory=False, workspace=ws, store=pg)
    assert not await ws.fs.exists(".harnessed/state/bot/alice/s1.json")  # state in PostgreSQL
    assert await agent.state_store.list_sessions("bot", "alice") == ["s1"]


def test_default_state_stores(tmp_path: object) -> None:
    assert isinstance(HarnessAgent("a", ScriptedModel()).state_store, InMemoryStateStore)
    local = HarnessAgent("a", ScriptedModel(), workspace=Workspace(str(tmp_path)))
    assert isinstance(local.state_store, JsonFileStateStore)


def test_bad_store_settings_are_named(pg: PostgresStore) -> None:
    with pytest.raises(ValueError, match="postgresql:// URL"):
        HarnessAgent("a", ScriptedModel(), store="mysql://x")
    with pytest.raises(TypeError, match="session_log"):
        HarnessAgent("a", ScriptedModel(), store=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="give store= or state_store=, not both"):
        HarnessAgent("a", ScriptedModel(), store=pg, state_store=InMemoryStateStore())


async def test_sub_agent_task_records_live_in_postgres(pg: PostgresStore) -> None:
    """Task records are session state: with ``store=`` another server sees them."""
    from harnessed.subagents import Subagents, SubagentSpec
    from tests.subagents.helpers import calls, child_model, spawn

    def server(model: ScriptedModel) -> HarnessAgent:
        spec = SubagentSpec("helper", "Helps.", model=child_model("helped"))
        return HarnessAgent("boss", model, memory=False, store=pg, capabilities=[Subagents([spec])])

    first = server(ScriptedModel([calls(spawn("helper", "help me")), "ok"]))
    await first.call("go", CTX)
    await first.close()
    second = server(ScriptedModel())
    tasks = await second.capability(Subagents).tasks(CTX)  # type: ignore[union-attr]
    assert [(t.agent_id, t.status.value, t.result) for t in tasks] == [
        ("helper", "COMPLETED", "helped")
    ]
    child = [s.session_id for s in await second.sessions("alice")]
    assert len(child) == 2 and "s1" in child  # the sub-agent's own session is shared too
    await second.close()
