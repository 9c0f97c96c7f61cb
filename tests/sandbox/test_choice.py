"""Which sandbox ``execute`` gets, what happens without one, and the bounds it keeps."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel
from harnessed.sandbox import BubblewrapSandbox, HostSandbox, SandboxError, SandboxLimits
from harnessed.shell import Shell
from harnessed.shell.tool import _logged
from tests.sandbox.helpers import execute, run

BOB = RuntimeContext("bob", "s1")


def tool_names(agent: HarnessAgent) -> set[str]:
    return set(agent.toolkit.names)


def test_without_a_usable_sandbox_execute_is_not_offered_and_the_reason_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _logged.clear()
    missing = BubblewrapSandbox(bwrap="/nonexistent/bwrap")
    with caplog.at_level(logging.WARNING, logger="harnessed.shell.tool"):
        first = HarnessAgent(
            "a", ScriptedModel(), workspace=tmp_path, capabilities=[Shell(sandbox=missing)]
        )
        second = HarnessAgent(
            "b", ScriptedModel(), workspace=tmp_path, capabilities=[Shell(sandbox=missing)]
        )
    assert "execute" not in tool_names(first) and "execute" not in tool_names(second)
    assert "read_file" in tool_names(first)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "not offered" in warnings[0] and "not installed" in warnings[0]
    with pytest.raises(SandboxError, match="no usable sandbox"):
        HarnessAgent("c", ScriptedModel(), workspace=tmp_path, shell=missing)
    with pytest.raises(ValueError, match="not both"):
        HarnessAgent("d", ScriptedModel(), workspace=tmp_path, shell=True, capabilities=[Shell()])


def test_host_execution_only_when_chosen_and_sandbox_settings_are_validated(
    tmp_path: Path,
) -> None:
    agent = HarnessAgent("h", ScriptedModel(), workspace=tmp_path, shell=HostSandbox())
    assert "execute" in tool_names(agent)
    assert "execute" not in tool_names(
        HarnessAgent("off", ScriptedModel(), workspace=tmp_path, shell=False)
    )
    with pytest.raises(ValueError, match="network"):
        BubblewrapSandbox(network="bridge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_processes"):
        SandboxLimits(max_processes=0)
    with pytest.raises(ValueError, match="read_only_paths"):
        BubblewrapSandbox(read_only_paths=("relative/dir",))


async def test_output_cap_and_timeout_hold_in_the_sandbox(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    big, slow, failing = await run(
        tmp_path,
        bwrap,
        BOB,
        [
            execute("head -c 300000 /dev/zero | tr '\\0' a; echo; echo END"),
            execute("echo before; sleep 30", timeout=1),
            execute("echo oops >&2; exit 3"),
        ],
    )
    assert "output truncated: 300,005 bytes" in big and big.rstrip().endswith("[exit code 0]")
    assert "END" in big and len(big) < 101_000
    assert "before" in slow and "timed out after 1 s" in slow
    assert "oops" in failing and "[exit code 3]" in failing
