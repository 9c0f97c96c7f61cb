"""The symlink attack end to end: Bob's commands make the links, Bob's file tools use them.

Alice works first (a real run writes her session log, state and memory ledger; her curated
``MEMORY.md``, plan, a sub-agent's log and an evicted tool result are there too). Bob's model
then runs ``execute`` in the default sandbox (bubblewrap; CI requires it) to make a link of
every shape in :mod:`tests.support.symlink_shapes`, looks through them from inside the
sandbox, tries hard links, and then drives the real file tools through each link: read,
write, edit, list, glob and grep. Nothing of Alice's may reach Bob, nothing of hers may change,
and Bob's planted text must not appear in Alice's next model request. A positive control per
link (the shared notes read through it) proves the links really lead to the root.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext, ToolResultEvent
from harnessed.memory import MemoryConfig
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from harnessed.sandbox import BubblewrapSandbox
from tests.sandbox.conftest import require_bwrap
from tests.sandbox.helpers import execute
from tests.support.fixtures import tool_step
from tests.support.symlink_shapes import (
    BOB_OWN,
    PLANT,
    ROOT_SHAPES,
    SECRET,
    Shape,
    alices_bytes,
    build_workspace,
)

ALICE = RuntimeContext("alice", "s1")
BOB = RuntimeContext("bob", "s1")
REFUSALS = ("not reachable", "not allowed", "read-only")
FINDS_SECRET = f"[{SECRET[0]}]{SECRET[1:]}"
"""Matches the secret without holding it, nor "alice" (a grep result repeats its pattern)."""


def _answer(request: ModelRequest) -> str:
    return "nothing to add"  # memory maintenance and any extra turn


def agent(root: Path, model: ScriptedModel, *, shell: bool) -> HarnessAgent:
    return HarnessAgent(
        "bot",
        model,
        workspace=root,
        shell=shell,
        memory=MemoryConfig(consolidate=False, maintenance_interval_minutes=None),
        max_iters=2000,
        compaction=None,  # the probes are the whole script; no summary request takes them
    )


async def tool_texts(root: Path, ctx: RuntimeContext, steps: list[ScriptedResponse]) -> list[str]:
    # a window wide enough that on a leaking build the probes all run (and the leak is what
    # fails), rather than the request outgrowing the context
    model = ScriptedModel([*steps, "done"], responder=_answer, context_window=20_000_000)
    helper = agent(root, model, shell=True)
    assert "execute" in helper.toolkit.names  # the default sandbox is there
    try:
        return [
            e.result.content
            async for e in helper.stream_events("go", ctx)
            if isinstance(e, ToolResultEvent)
        ]
    finally:
        await helper.close()


def sandbox_command(real: Path, shapes: list[tuple[Shape, str]]) -> str:
    """Make every link from inside the sandbox (relative to /workspace, its cwd)."""
    lines = ["set +e"]
    for shape, link in shapes:
        target = shape.target(shape.location, real, real)
        lines.append(f"ln -s {shlex.quote(target)} {shlex.quote(link)}")
    return "\n".join(lines)


def probes_through(link: str, live: bool) -> list[tuple[str, ScriptedResponse]]:
    """``(expectation, call)`` for one link: ``refused``, ``quiet`` (no error, nothing of
    Alice's) or ``live`` (the shared notes come back). Through a link that is not ``live``
    (one in Bob's own scope, never followed) everything is refused."""
    memory = f"{link}/agents/bot/users/alice/MEMORY.md"
    probes = [
        ("live", tool_step("read_file", path=f"{link}/notes/shared.md")),
        ("refused", tool_step("read_file", path=memory)),
        ("refused", tool_step("write_file", path=memory, content=PLANT)),
        ("refused", tool_step("edit_file", path=memory, old=SECRET, new=PLANT)),
        ("refused", tool_step("write_file", path=f"{link}/{_ledger()}", content=PLANT)),
        ("refused", tool_step("write_file", path=f"{link}/{_PLAN}", content=PLANT)),
        ("refused", tool_step("write_file", path=f"{link}/{_STATE}", content="{}")),
        ("refused", tool_step("read_file", path=f"{link}/agents/bot/sessions/alice/s1.log.jsonl")),
        ("refused", tool_step("read_file", path=f"{link}/large_tool_results/bot/alice/s1/big.txt")),
        ("refused", tool_step("list_files", path=f"{link}/agents/bot/users")),
        ("quiet", tool_step("list_files", path=link)),
        ("quiet", tool_step("glob_files", pattern="**/*", path=link)),
        ("quiet", tool_step("glob_files", pattern=f"{link}/**/*.md")),
        ("quiet", tool_step("grep_files", pattern=FINDS_SECRET, path=link)),
        ("quiet", tool_step("grep_files", pattern="PIN")),
    ]
    if live:
        return probes
    return [
        ("refused" if link in str(c.tool_calls[0].arguments) else "quiet", c) for _, c in probes
    ]


def _ledger() -> str:
    return "agents/bot/users/alice/memory/2026-01-02.md"


_PLAN = "agents/bot/users/alice/plans/PLAN.md"
_STATE = ".harnessed/state/bot/alice/s1.json"


async def test_links_made_in_the_sandbox_give_bob_nothing_of_alice(tmp_path: Path) -> None:
    require_bwrap(BubblewrapSandbox())
    real, given = build_workspace(tmp_path, run_made=False)
    # Alice really works in the workspace first (log, state, ledger of her own)
    alice = agent(
        given,
        ScriptedModel(
            [
                tool_step("memory_save", content=f"Alice's door code is {SECRET}."),
                tool_step("todo_write", todos=[{"id": "1", "content": f"pay {SECRET}"}]),
                "done",
            ],
            responder=_answer,
        ),
        shell=False,
    )
    await alice.call("remember this", ALICE)
    await alice.close()
    assert (real / "agents/bot/sessions/alice/s1.log.jsonl").stat().st_size > 0
    before = alices_bytes(real)
    assert {
        "agents/bot/users/alice/MEMORY.md",
        "agents/bot/sessions/alice/s1.log.jsonl",
        "agents/bot/sessions/alice/index.sqlite3",
        "agents/researcher/sessions/alice/s1.log.jsonl",
        "agents/bot/users/alice/plans/PLAN.md",
        "large_tool_results/bot/alice/s1/big.txt",
    } <= set(before)
    assert any("/alice/memory/" in p for p in before)  # the ledger memory_save wrote

    shapes = [
        (shape, f"{shape.location}/lnk{i}".lstrip("/")) for i, shape in enumerate(ROOT_SHAPES)
    ]
    inside = "\n".join(
        [
            # what a link to the root, to /workspace/.., or to the host path shows in here
            "cat lnk0/agents/bot/users/alice/MEMORY.md; ls -a lnk0/agents/bot/users",
            f"cat {real}/agents/bot/users/alice/MEMORY.md",
            "ln -s /workspace/../ wsup; ls wsup/; cat wsup/workspace/agents/bot/users/alice/*",
            "ls -a /workspace/agents/bot/users /workspace/.harnessed",
            # hard links: to Alice's file (not there), and across Bob's own mount (EXDEV)
            "ln /workspace/agents/bot/users/alice/MEMORY.md hard1",
            f"echo mine > {BOB_OWN}/f; ln {BOB_OWN}/f hard2",
            "true",
        ]
    )
    steps = [execute(sandbox_command(real, shapes)), execute(inside)]
    expectations: list[str] = ["made", "inside"]
    for shape, link in shapes:
        for expectation, step in probes_through(link, shape.live):
            expectations.append(expectation)
            steps.append(step)
    results = await tool_texts(given, BOB, steps)
    assert len(results) == len(steps)
    for shape, link in shapes:  # every link exists on the host, made by the sandbox
        assert (real / link).is_symlink(), (shape.id, results[0])
    assert "Invalid cross-device link" in results[1], results[1]
    assert not (real / "hard1").exists() and not (real / "hard2").exists()
    for step, expectation, text in zip(steps, expectations, results, strict=True):
        assert SECRET not in text, (step, text)
        assert PLANT not in text or expectation != "quiet", (step, text)
        if expectation == "refused":
            assert any(r in text for r in REFUSALS), (step, text)
        elif expectation == "live":
            assert "team notes" in text, (step, text)
        elif expectation == "quiet":
            assert "alice" not in text and "not reachable" not in text, (step, text)
    assert alices_bytes(real) == before  # nothing of Alice's changed or was added

    # Alice's next request carries her own memory and nothing Bob planted
    model = ScriptedModel(["hello again"], responder=_answer)
    again = agent(given, model, shell=False)
    await again.call("what do you remember?", ALICE)
    await again.close()
    first = model.requests[0]
    shown = "\n".join(m.text for m in first.messages)
    assert SECRET in shown  # her MEMORY.md is part of the request: a plant would show
    assert PLANT not in shown


async def test_links_in_bobs_own_scope_never_turn_his_memory_into_alices(tmp_path: Path) -> None:
    """The harness reads and appends Bob's ledger itself (memory_save, memory_get,
    memory_search): links his commands leave in his own folders must not redirect that."""
    require_bwrap(BubblewrapSandbox())
    real, given = build_workspace(tmp_path, run_made=False)
    before = alices_bytes(real)
    today = "$(date +%Y-%m-%d)"
    make = "\n".join(
        [
            f"ln -s ../../alice/MEMORY.md {BOB_OWN}/{today}.md",
            f"ln -s ../../alice/memory/2026-01-01.md {BOB_OWN}/old.md",
            f"ln -s ../../../../.. {BOB_OWN}/up",
            "ln -s ../../alice/plans/PLAN.md agents/bot/users/bob/plans/PLAN.md",
            f"ls -l {BOB_OWN} agents/bot/users/bob/plans",
        ]
    )
    steps = [
        execute(make),
        tool_step("memory_save", content=PLANT),
        tool_step("memory_get", path=f"{BOB_OWN}/old.md"),
        tool_step("memory_get", path=f"{BOB_OWN}/up/agents/bot/users/alice/MEMORY.md"),
        tool_step("memory_search", query="PIN"),
        tool_step("read_file", path="agents/bot/users/bob/plans/PLAN.md"),
        tool_step("grep_files", pattern=FINDS_SECRET, path="agents/bot/users/bob"),
    ]
    results = await tool_texts(given, BOB, steps)
    assert "old.md -> ../../alice" in results[0], results[0]  # the links are there
    for step, text in zip(steps, results, strict=True):
        assert SECRET not in text, (step, text)
    assert "not reachable" in results[1] or "symbolic link" in results[1], results[1]
    assert alices_bytes(real) == before
    assert PLANT not in (real / "agents/bot/users/alice/MEMORY.md").read_text()


async def test_shared_workspace_material_linked_to_alices_memory_shows_nothing(
    tmp_path: Path,
) -> None:
    """The harness puts the shared ``MEMORY.md`` and ``knowledge/`` into every request itself:
    links a command makes there must not bring Alice's memory into Bob's request."""
    require_bwrap(BubblewrapSandbox())
    _real, given = build_workspace(tmp_path, run_made=False)
    make = "\n".join(
        [
            "ln -s agents/bot/users/alice/MEMORY.md MEMORY.md",
            "mkdir -p knowledge memory",
            "ln -s ../agents/bot/users/alice/MEMORY.md knowledge/KNOWLEDGE.md",
            "ln -s ../hop/agents/bot/users/alice/memory/2026-01-01.md knowledge/ledger.md",
            "ln -s ../hop/agents/bot/users/alice/memory/2026-01-01.md memory/2026-01-01.md",
            "ls -l MEMORY.md knowledge",
        ]
    )
    results = await tool_texts(given, BOB, [execute(make)])
    assert "KNOWLEDGE.md -> ../agents" in results[0], results[0]
    model = ScriptedModel(["hello"], responder=_answer)
    bob = agent(given, model, shell=False)
    await bob.call("what do you know?", BOB)
    await bob.close()
    assert model.requests
    for request in model.requests:
        assert all(SECRET not in m.text for m in request.messages)
