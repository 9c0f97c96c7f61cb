"""Every public name is importable from where the README says, and ``__all__`` is true."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import harnessed

README = Path(__file__).resolve().parents[1] / "README.md"
_IMPORT = re.compile(r"^\s*from (harnessed[\w.]*) import (\([^)]*\)|[^\n]+)", re.MULTILINE)


def test_every_name_in_all_resolves():
    for name in harnessed.__all__:
        assert getattr(harnessed, name) is not None, name


def test_names_the_readme_imports_exist():
    found = _IMPORT.findall(README.read_text(encoding="utf-8"))
    assert found
    for module, names in found:
        imported = importlib.import_module(module)
        listed = re.sub(r"#[^\n]*", "", names).strip().strip("()")
        for name in (n.strip().split(" as ")[0] for n in listed.split(",")):
            if name and name != "...":
                assert hasattr(imported, name), f"README: from {module} import {name}"


def test_names_used_in_the_readme_are_exported_at_the_top():
    for name in (
        "ScriptedModel",
        "ShellConfig",
        "TiktokenEstimator",
        "SqliteSearchIndex",
        "JsonFileStateStore",
        "OpenAIChatModel",
        "RetryPolicy",
    ):
        assert name in harnessed.__all__
        assert getattr(harnessed, name).__name__ == name


def test_provider_sdks_are_not_imported_by_import_harnessed():
    import subprocess
    import sys

    code = "import harnessed, sys; print('anthropic' in sys.modules, 'tantivy' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["False", "False"]


def test_import_harnessed_leaves_heavy_modules_for_first_use():
    """yaml (skills), OpenTelemetry (tracing), rich (the CLI), HTTP clients, pydantic, fsspec,
    sqlite3 and the provider SDKs are imported by what uses them, not by ``import harnessed``;
    an agent built and called without them does not import them either."""
    import subprocess
    import sys

    heavy = (
        "yaml",
        "opentelemetry",
        "rich",
        "httpx",
        "pydantic",
        "fsspec",
        "sqlite3",
        "openai",
        "anthropic",
        "tiktoken",
        "mcp",
        "tantivy",
    )
    code = (
        "import sys\n"
        "import harnessed\n"
        f"heavy = {heavy!r}\n"
        "print(*[m for m in heavy if m in sys.modules])\n"
        "import asyncio\n"
        "agent = harnessed.HarnessAgent('a', harnessed.ScriptedModel(['hi']))\n"
        "asyncio.run(agent.call('hello', harnessed.RuntimeContext('u', 's')))\n"
        "late = [m for m in ('yaml', 'opentelemetry', 'rich') if m in sys.modules]\n"
        "print('after a call:', *late)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.splitlines() == ["", "after a call:"]


def _loaded_after(code: str) -> list[str]:
    import subprocess
    import sys

    script = (
        f"import sys\n{code}\nprint(*sorted(m for m in sys.modules if m.startswith('harnessed')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.split()


def test_import_harnessed_imports_no_subsystem_until_a_name_is_used():
    assert _loaded_after("import harnessed") == [
        "harnessed",
        "harnessed._internal",
        "harnessed._internal.lazy",
    ]


def test_the_agent_alone_leaves_optional_subsystems_for_first_use():
    """Sub-agents, the gateway, sandbox back ends and steerable sessions load when an agent
    uses them, not with the agent class."""
    loaded = set(_loaded_after("from harnessed import HarnessAgent"))
    assert "harnessed.agent" in loaded
    for optional in (
        "harnessed.subagents",
        "harnessed.gateway",
        "harnessed.skills",
        "harnessed.mcp",
        "harnessed.sandbox.bubblewrap",
        "harnessed.sandbox.manager",
        "harnessed.sessions.session",
        "harnessed.turns.gate",
    ):
        assert optional not in loaded, optional


def test_lazy_names_resolve_once_and_unknown_names_are_attribute_errors():
    import pytest

    import harnessed.sandbox
    import harnessed.sessions

    assert harnessed.sandbox.BubblewrapSandbox.__name__ == "BubblewrapSandbox"
    assert "BubblewrapSandbox" in vars(harnessed.sandbox)  # bound after the first lookup
    assert "AgentSession" in dir(harnessed.sessions)
    from harnessed.sessions import AgentSession

    assert AgentSession is harnessed.sessions.AgentSession
    with pytest.raises(AttributeError, match=r"'harnessed\.sessions' has no attribute 'Nope'"):
        _ = harnessed.sessions.Nope
    with pytest.raises(ImportError):
        exec("from harnessed import NoSuchName")
