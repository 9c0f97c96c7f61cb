"""Large tool results go to workspace files (BEHAVIOUR.md section 2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harnessed import HarnessAgent, Msg, RuntimeContext, ToolResultEvictionConfig, tool
from harnessed.compaction import DEFAULT_EVICTION_EXCLUDED_TOOLS, OFFLOAD_KEY
from harnessed.context import HistoryBudget
from harnessed.log import SessionRecord
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from harnessed.workspace import MemoryFilesystem, Workspace
from tests.compaction.helpers import custom, text_of
from tests.context.helpers import info_for
from tests.support.fixtures import CTX, call, collect

BIG = 80_001


@tool(read_only=True)
def dump_logs(size: int, seed: str = "log") -> str:
    """Return ``size`` characters of service logs.

    Args:
        size: How many characters.
        seed: Varies the text.
    """
    return text_of(size, seed)


def tool_messages(request: ModelRequest) -> list[Msg]:
    return [m for m in request.messages if m.role == "tool"]


def transforms_logged(records: list[SessionRecord]) -> list[list[str]]:
    return [list(r.payload["context_manifest"]["transforms"]) for r in records]


def offload_of(message: Msg) -> dict[str, object]:
    marks = message.metadata[OFFLOAD_KEY]
    [(_, mark)] = marks.items()
    return dict(mark)


async def test_a_result_one_char_over_the_limit_is_written_out_and_replaced(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=BIG)]), "ok"],
        context_window=1_000_000,  # large enough for the reference's limit and previews
    )
    agent = HarnessAgent("ev", model, workspace=tmp_path, tools=[dump_logs])
    await agent.call("show me the logs", CTX)

    full = text_of(BIG)
    [sent] = tool_messages(model.requests[1])
    assert full not in sent.text and len(sent.text) < 6_000
    mark = offload_of(sent)
    path = str(mark["path"])
    assert path.startswith("large_tool_results/ev/u/")
    assert path.rsplit("/", 1)[1].startswith("c1-") and len(path.rsplit("-", 1)[1]) == 16
    assert (tmp_path / path).read_text(encoding="utf-8") == full
    # the notice: size, path, how to read it, head and tail previews
    assert f"{BIG:,} characters" in sent.text
    assert path in sent.text and "read_file" in sent.text
    assert full[:2_000] in sent.text and full[-2_000:] in sent.text
    assert full[2_000:2_100] not in sent.text
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert transforms_logged(await agent.session_log(CTX, types=["context/build"])) == [
        [],
        ["tool_result_offload"],
    ]
    # the working history keeps the notice (same message id); the session log keeps everything
    state = await agent.load_state(CTX)
    [stored] = [m for m in state.history if m.role == "tool"]
    assert stored.id == sent.id and stored.text == sent.text
    logged = [m for m in await agent.session_messages(CTX) if m.role == "tool"]
    assert [m.text for m in logged] == [full] and logged[0].id == sent.id


async def test_a_result_of_exactly_the_limit_stays_in_context(tmp_path: Path) -> None:
    # At a 200k window the default share (a tenth, at 4 characters a token) is exactly the
    # reference's 80,000 characters; smaller windows get a smaller limit.
    size = 80_000
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=size)]), "ok"],
        context_window=200_000,
    )
    agent = HarnessAgent("ev", model, workspace=tmp_path, tools=[dump_logs])
    await agent.call("show me the logs", CTX)
    [sent] = tool_messages(model.requests[1])
    assert sent.text == text_of(size)
    assert OFFLOAD_KEY not in sent.metadata
    assert not (tmp_path / "large_tool_results").exists()


@pytest.mark.parametrize("name", sorted(DEFAULT_EVICTION_EXCLUDED_TOOLS))
async def test_excluded_tools_are_never_evicted(tmp_path: Path, name: str) -> None:
    @tool(name=name, read_only=True)
    def paged(size: int) -> str:
        """Stand-in for a tool whose output is paged by design."""
        return text_of(size, name)

    model = ScriptedModel([ScriptedResponse(tool_calls=[call(name, "c1", size=100_000)]), "ok"])
    agent = HarnessAgent("ev", model, workspace=tmp_path, tools=[paged])
    await agent.call("go", CTX)
    [sent] = tool_messages(model.requests[1])
    assert sent.text == text_of(100_000, name)
    assert not (tmp_path / "large_tool_results").exists()


async def test_execute_output_is_not_excluded(tmp_path: Path) -> None:
    @tool(name="execute")
    def execute(size: int) -> str:
        """Stand-in for a shell command with a long output."""
        return text_of(size, "sh")

    model = ScriptedModel([ScriptedResponse(tool_calls=[call("execute", "c1", size=BIG)]), "ok"])
    agent = HarnessAgent("ev", model, workspace=tmp_path, tools=[execute])
    await agent.call("go", CTX)
    [sent] = tool_messages(model.requests[1])
    assert OFFLOAD_KEY in sent.metadata


async def test_the_agent_can_read_the_evicted_output_back_with_read_file(tmp_path: Path) -> None:
    """End to end: the notice tells the model a path that the built-in read_file can open."""

    def respond(request: ModelRequest) -> ScriptedResponse | str:
        last = request.messages[-1] if request.messages[-1].role == "tool" else None
        tool_msgs = [m for m in request.messages if m.role == "tool"]
        if len(tool_msgs) == 1 and last is not None:
            path = str(offload_of(last)["path"])
            return ScriptedResponse(tool_calls=[call("read_file", "c2", path=path, limit=3)])
        return "done"

    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=200_000)])], responder=respond
    )
    agent = HarnessAgent("ev", model, workspace=tmp_path, tools=[dump_logs])
    await agent.call("go", CTX)
    read_back = tool_messages(model.requests[2])[-1].text
    first_line = text_of(200_000).splitlines()[0]
    assert first_line in read_back and "offset=3" in read_back


class CountingFilesystem(MemoryFilesystem):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.fail = fail

    async def write(self, path: str, data: bytes | str) -> None:
        self.writes.append(path)
        if self.fail:
            raise OSError("disk full")
        await super().write(path, data)


async def test_the_same_output_is_written_once_and_never_evicted_twice() -> None:
    fs = CountingFilesystem()
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=BIG)]),
            ScriptedResponse(tool_calls=[call("dump_logs", "c2", size=10)]),
            ScriptedResponse(tool_calls=[call("dump_logs", "c3", size=10)]),
            "ok",
        ],
        context_window=1_000_000,  # the limit and previews do not depend on the window here
    )
    agent = HarnessAgent("ev", model, workspace=Workspace(fs), tools=[dump_logs])
    await agent.call("go", CTX)
    assert len(fs.writes) == 1
    notices = [tool_messages(r)[0] for r in model.requests[1:]]
    assert len({m.text for m in notices}) == 1  # the notice itself is never evicted again
    builds = await agent.session_log(CTX, types=["context/build"])
    assert transforms_logged(builds) == [[], ["tool_result_offload"], [], []]

    # Preparing again from the original messages (as after a request that was not committed)
    # evicts again, deterministically, without writing the file a second time.
    original = (await agent.session_messages(CTX))[:3]
    assert agent.compiler.evictor is not None
    state = await agent.load_state(CTX)
    limit = agent.compiler.policy.input_limit(model.context_window)  # as the run's requests
    budget = HistoryBudget(limit, agent.compiler.meter.message, info_for(agent, model), state)
    again = await agent.compiler.evictor(original, budget)
    assert again.transforms == ("tool_result_offload",)
    assert again.history[2].text == notices[0].text and again.history[2].id == notices[0].id
    assert len(fs.writes) == 1


async def test_a_failed_write_leaves_the_result_untouched() -> None:
    fs = CountingFilesystem(fail=True)
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=BIG)]), "ok"])
    agent = HarnessAgent("ev", model, workspace=Workspace(fs), tools=[dump_logs])
    events = await collect(agent, "go", CTX)
    [sent] = tool_messages(model.requests[1])
    assert sent.text == text_of(BIG) and OFFLOAD_KEY not in sent.metadata
    [failure] = custom(events, "tool_result_offload_failed")
    assert failure["call_id"] == "c1" and failure["error_type"] == "OSError"
    manifest = agent.last_manifest(CTX)
    assert manifest is not None and manifest.validation == "passed"
    assert "tool_result_offload" not in manifest.transforms


async def test_without_a_workspace_or_when_turned_off_results_stay(tmp_path: Path) -> None:
    for kwargs in ({}, {"workspace": tmp_path, "tool_result_eviction": None}):
        model = ScriptedModel(
            [ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=BIG)]), "ok"]
        )
        agent = HarnessAgent("ev", model, tools=[dump_logs], **kwargs)  # type: ignore[arg-type]
        await agent.call("go", CTX)
        [sent] = tool_messages(model.requests[1])
        assert sent.text == text_of(BIG)
    assert not (tmp_path / "large_tool_results").exists()


async def test_custom_limits_path_and_isolation_scope() -> None:
    fs = MemoryFilesystem()
    config = ToolResultEvictionConfig(max_result_chars=1_000, preview_chars=5_000, path="big/")
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=1_200)]), "ok"]
    )
    agent = HarnessAgent(
        "ev",
        model,
        workspace=Workspace(fs, scope="session"),
        tools=[dump_logs],
        tool_result_eviction=config,
    )
    await agent.call("go", RuntimeContext("alice", "s9"))
    [sent] = tool_messages(model.requests[1])
    path = str(offload_of(sent)["path"])
    assert path.startswith("big/ev/alice/s9/c1-")
    assert await fs.read_text(path) == text_of(1_200)
    # the preview is at most half the text on each side
    assert "first 600 characters" in sent.text and "last 600 characters" in sent.text


def test_config_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="max_result_chars"):
        ToolResultEvictionConfig(max_result_chars=0)
    with pytest.raises(ValueError, match="preview_chars"):
        ToolResultEvictionConfig(preview_chars=-1)
    with pytest.raises(ValueError, match="path"):
        ToolResultEvictionConfig(path="../outside")
    with pytest.raises(ValueError, match="path"):
        ToolResultEvictionConfig(path="")
    with pytest.raises(TypeError, match="excluded_tools"):
        ToolResultEvictionConfig(excluded_tools="read_file")  # type: ignore[arg-type]
    config = ToolResultEvictionConfig(excluded_tools=["a", "b"])  # type: ignore[arg-type]
    assert config.excluded_tools == frozenset({"a", "b"})


async def test_a_failed_write_that_does_not_fit_says_what_the_model_got() -> None:
    fs = CountingFilesystem(fail=True)
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=208_000)]), "ok"],
        context_window=30_000,
    )
    agent = HarnessAgent("ev", model, workspace=Workspace(fs), tools=[dump_logs], compaction=None)
    events = await collect(agent, "go", CTX)
    [sent] = tool_messages(model.requests[1])
    assert len(sent.text) < 208_000  # it could not stay whole ...
    assert "could not be saved to a workspace file (OSError)" in sent.text  # ... and it says so
    assert "session log" in sent.text
    [failure] = custom(events, "tool_result_offload_failed")
    assert failure["kept"] == "history" and failure["chars"] == 208_000


async def test_a_window_share_writes_out_a_result_too_large_for_a_small_window(
    tmp_path: Path,
) -> None:
    sent: dict[float | None, str] = {}
    for share in (None, 0.1):
        model = ScriptedModel(
            [ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=9_000)]), "ok"],
            context_window=16_000,
        )
        config = ToolResultEvictionConfig(max_window_share=share)
        agent = HarnessAgent(
            "ev", model, workspace=tmp_path / str(share), tools=[dump_logs],
            tool_result_eviction=config,
        )  # fmt: skip
        await agent.call("show me the logs", CTX)
        [message] = tool_messages(model.requests[1])
        sent[share] = message.text
        limit = config.limit(16_000)
        assert limit == (80_000 if share is None else 6_400)
    assert sent[None] == text_of(9_000)  # 9,000 characters fit under the 80,000 default
    assert "9,000 characters" in sent[0.1] and len(sent[0.1]) < 6_000


def test_a_window_share_must_be_a_fraction() -> None:
    for bad in (0, 1.5, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match="max_window_share"):
            ToolResultEvictionConfig(max_window_share=bad)  # type: ignore[arg-type]


async def sent_at_32k(workspace: Path, size: int) -> Msg:
    """The tool message the model got after a call returning ``size`` characters (32k window)."""
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("dump_logs", "c1", size=size)]), "ok"],
        context_window=32_000,
    )
    agent = HarnessAgent("ev", model, workspace=workspace, tools=[dump_logs])
    await agent.call("show me the logs", CTX)
    [sent] = tool_messages(model.requests[1])
    return sent


async def test_by_default_a_result_over_a_tenth_of_a_small_window_is_written_out(
    tmp_path: Path,
) -> None:
    # 32k window: a tenth of its ~27k-token input limit is about 11,000 characters
    sent = await sent_at_32k(tmp_path, 20_000)
    assert OFFLOAD_KEY in sent.metadata and len(sent.text) < 6_000
    assert ToolResultEvictionConfig().limit(32_000) == 12_800
    assert ToolResultEvictionConfig().limit(1_000_000) == 80_000


async def test_in_a_small_window_the_preview_shrinks_with_the_limit(tmp_path: Path) -> None:
    # 32k: an input limit of about 27-30k tokens (4,000 kept for output, 640 of margin, and the
    # estimator's calibration) makes the limit 11-12k characters, about 14 % of 80,000; each
    # preview is as much of 2,000
    sent = await sent_at_32k(tmp_path, 20_000)
    full = text_of(20_000)
    [head] = re.findall(r"--- first (\d+) characters ---", sent.text)
    [tail] = re.findall(r"--- last (\d+) characters ---", sent.text)
    shown = int(head)
    assert head == tail and 250 <= shown <= 350
    assert full[:shown] in sent.text and full[-shown:] in sent.text
    assert full[: shown + 1] not in sent.text
    assert len(sent.text) < 1_200  # a notice of a fortieth of the window, not a third


def test_the_preview_scales_only_where_the_window_sets_the_limit() -> None:
    default = ToolResultEvictionConfig()
    assert default.preview(200_000) == default.preview(1_000_000) == 2_000  # the reference's
    assert default.preview(128_000) == 1_280 and default.preview(32_000) == 320
    # a limit the user set below the window's keeps the preview the user set
    own = ToolResultEvictionConfig(max_result_chars=10_000, preview_chars=1_500)
    assert own.preview(32_000) == 1_500 and own.preview(16_000) == 1_500 * 6_400 // 10_000
    assert ToolResultEvictionConfig(max_window_share=None).preview(8_000) == 2_000
    assert ToolResultEvictionConfig(preview_chars=0).preview(32_000) == 0
